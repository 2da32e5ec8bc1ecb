//go:build !unix

package index

import "os"

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

func (m *mapping) close() { m.data = nil }
