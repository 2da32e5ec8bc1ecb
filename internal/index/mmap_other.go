//go:build !unix

package index

import (
	"io"
	"os"
)

// mapping is a saved index read whole into memory, where files are not
// mapped.
type mapping struct{ data []byte }

func mapFile(path string) (*mapping, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &mapping{data: data}, nil
}

// mapOpen reads the first size bytes of f.
func mapOpen(f *os.File, size int64) (*mapping, error) {
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, err
	}
	return &mapping{data: data}, nil
}

func (m *mapping) close() { m.data = nil }
