package tools

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// fileReader reads the files of one search for one worker. It is not safe
// for concurrent use; each worker has its own.
type fileReader interface {
	// read reads the whole file rel into buf (reusing its storage) or says
	// why it was skipped.
	read(rel string, buf []byte, maxSize int64) ([]byte, skipKind)
	close()
}

// openReader reads through Workspace.Open: every check the wall has, at
// the cost of walking the path component by component for each file.
type openReader struct {
	open func(rel string) (*os.File, fs.FileInfo, error)
}

func (r openReader) close() {}

func (r openReader) read(rel string, buf []byte, maxSize int64) ([]byte, skipKind) {
	f, info, err := r.open(rel)
	switch {
	case errors.Is(err, ErrNotRegular), errors.Is(err, ErrDenied):
		// A symlink to a directory or to a secret: nothing to search,
		// and nothing worth reporting.
		return buf, skipSilently
	case err != nil:
		return buf, skipUnreadable
	}
	defer f.Close()
	if info.Size() > maxSize {
		return buf, skipHuge
	}
	return readAll(f, buf, info.Size(), maxSize)
}

// readAll reads f to its end into buf, like os.ReadFile but into a reused
// buffer sized from the file's size.
func readAll(f io.Reader, buf []byte, size, maxSize int64) ([]byte, skipKind) {
	if want := int(size) + 1; cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, notSkipped
		}
		if err != nil {
			return buf, skipUnreadable
		}
		if int64(len(buf)) == size {
			// As much as fstat promised: done, without the extra
			// read(2) that would only report EOF. A file still being
			// written is searched as it was a moment ago.
			return buf, notSkipped
		}
		if int64(len(buf)) > maxSize {
			return buf, skipHuge // it grew while we read it
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
