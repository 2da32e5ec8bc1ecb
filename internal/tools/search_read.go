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

func (r openReader) Read(rel string, buf []byte, maxSize int64) ([]byte, bool, search.Skip) {
	f, info, err := r.open(rel)
	switch {
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrDenied):
		// A symlink to a directory or to a secret: nothing to search,
		// and nothing worth reporting.
		return buf, false, search.SkipSilently
	case err != nil:
		return buf, false, search.SkipUnreadable
	}
	defer f.Close()
	if info.Size() > maxSize {
		return buf, false, search.SkipHuge
	}
	buf, skip := search.ReadAll(f, buf, info.Size(), maxSize)
	return buf, false, skip
}

// textHolder is a code index that keeps the text of the files it indexed
// (index.Index.Text): what Workspace.Open gave when it was built, every
// check of the wall applied, for exactly the commit a lease pins. An index
// that may not match the files (a path checkout edited since its commit)
// is handed out wrapped, without this method, so its text is never read.
type textHolder interface {
	Text(path string) ([]byte, bool)
}

// indexReader reads a file's text from the code index when the index
// holds it, from the checkout otherwise: a search narrowed to a thousand
// files opens none of them. The text is the one the checkout had at the
// index's commit, which is the lease's; the secret filter still sees it
// (it wraps this reader), and only files of the current listing are ever
// asked for, so a file denied since is not read either way.
type indexReader struct {
	text textHolder
	disk search.FileReader
}

func (r indexReader) Close() { r.disk.Close() }

func (r indexReader) Read(rel string, buf []byte, maxSize int64) ([]byte, bool, search.Skip) {
	if t, ok := r.text.Text(rel); ok {
		if int64(len(t)) > maxSize {
			return buf, false, search.SkipHuge
		}
		return t, true, search.NotSkipped
	}
	return r.disk.Read(rel, buf, maxSize)
}

// readers returns how the job's workers read files: from idx when it
// holds their text (see indexReader), else through a root on the checkout
// opened for this search when the fast path is available (see dirReader),
// else through Workspace.Open.
func (s *SearchCode) readers(idx CodeIndex) (newReader func() search.FileReader, closeRoot func()) {
	// The checkout as the Workspace resolved it when it was opened, so a
	// symlink on its path re-pointed since cannot send the search to
	// another tree than the one Open reads.
	real := s.ws.real
	root, _ := os.OpenRoot(real)
	closeRoot = func() {}
	if root != nil {
		closeRoot = func() { root.Close() }
	}
	disk := func() search.FileReader { return newSearchReader(root, real, s.ws.Open) }
	if th, ok := idx.(textHolder); ok {
		return func() search.FileReader { return indexReader{text: th, disk: disk()} }, closeRoot
	}
	return disk, closeRoot
}
