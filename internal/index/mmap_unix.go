//go:build unix

package index

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// mapping is a saved index mapped read-only into memory: the pages a
// query touches are read from the page cache, the rest never are. It is
// unmapped once no index reading it is reachable. Save replaces a file by
// renaming a new one over it, never writing it in place, so a mapping
// always reads the file as it was when mapped; a file truncated in place
// by someone else would fault the process, which is why the data
// directory is the service's alone (0700).
type mapping struct {
	data    []byte
	cleanup runtime.Cleanup
}

// mapFile maps path; an empty file maps to no bytes.
func mapFile(path string) (*mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return mapOpen(f, fi.Size())
}

// mapOpen maps the first size bytes of f, which stays open only as long
// as the caller keeps it: the mapping outlives it.
func mapOpen(f *os.File, size int64) (*mapping, error) {
	if size == 0 {
		return &mapping{}, nil
	}
	if size != int64(int(size)) {
		return nil, fmt.Errorf("%s is too large to map", f.Name())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", f.Name(), err)
	}
	m := &mapping{data: data}
	m.cleanup = runtime.AddCleanup(m, func(b []byte) { syscall.Munmap(b) }, data)
	return m, nil
}

// close unmaps m at once, for a file that turned out not to be an index.
func (m *mapping) close() {
	if m.data != nil {
		m.cleanup.Stop()
		syscall.Munmap(m.data)
		m.data = nil
	}
}
