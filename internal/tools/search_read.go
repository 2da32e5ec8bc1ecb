package tools

import (
	"errors"
	"io/fs"
	"os"

	"github.com/askrepo/askrepo/internal/search"
)

// openReader reads through Workspace.Open: every check the wall has, at
// the cost of walking the path component by component for each file.
type openReader struct {
	open func(rel string) (*os.File, fs.FileInfo, error)
}

func (r openReader) Close() {}

func (r openReader) Read(rel string, buf []byte, maxSize int64) ([]byte, search.Skip) {
	f, info, err := r.open(rel)
	switch {
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrDenied):
		// A symlink to a directory or to a secret: nothing to search,
		// and nothing worth reporting.
		return buf, search.SkipSilently
	case err != nil:
		return buf, search.SkipUnreadable
	}
	defer f.Close()
	if info.Size() > maxSize {
		return buf, search.SkipHuge
	}
	return search.ReadAll(f, buf, info.Size(), maxSize)
}

// readers returns how the job's workers read files: through a root on the
// checkout opened for this search when the fast path is available (see
// dirReader), else through Workspace.Open.
func (s *SearchCode) readers() (newReader func() search.FileReader, closeRoot func()) {
	// The checkout as the Workspace resolved it when it was opened, so a
	// symlink on its path re-pointed since cannot send the search to
	// another tree than the one Open reads.
	real := s.ws.real
	root, _ := os.OpenRoot(real)
	closeRoot = func() {}
	if root != nil {
		closeRoot = func() { root.Close() }
	}
	return func() search.FileReader { return newSearchReader(root, real, s.ws.Open) }, closeRoot
}
