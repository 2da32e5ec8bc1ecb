package search

import "io"

// FileReader reads the files of one search for one worker; the caller
// implements it, so what may be opened (and how) is decided outside this
// package. It is not safe for concurrent use; each worker has its own.
type FileReader interface {
	// Read reads the whole file rel into buf (reusing its storage, or
	// growing it: the caller keeps what comes back for the next read) or
	// says why it was skipped. When lent is set, text is not buf but
	// memory the reader holds the file's text in (a code index's copy):
	// the caller only reads it, only until Close, and keeps buf.
	Read(rel string, buf []byte, maxSize int64) (text []byte, lent bool, skip Skip)
	// Close releases what the reader holds open; it is called once,
	// when the worker is done.
	Close()
}

// ReadAll reads f to its end into buf, like os.ReadFile but into a reused
// buffer sized from the file's size, which the caller got from fstat. A
// file larger than maxSize, or growing past it while read, is SkipHuge.
func ReadAll(f io.Reader, buf []byte, size, maxSize int64) ([]byte, Skip) {
	if want := int(size) + 1; cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, NotSkipped
		}
		if err != nil {
			return buf, SkipUnreadable
		}
		if int64(len(buf)) == size {
			// As much as fstat promised: done, without the extra
			// read(2) that would only report EOF. A file still being
			// written is searched as it was a moment ago.
			return buf, NotSkipped
		}
		if int64(len(buf)) > maxSize {
			return buf, SkipHuge // it grew while we read it
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}
