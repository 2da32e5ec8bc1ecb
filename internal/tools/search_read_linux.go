package tools

import (
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"syscall"

	"github.com/askrepo/askrepo/internal/search"
)

// Workspace.Open walks every path through the os.Root one component at a
// time and then asks /proc where the file really is: about fifteen system
// calls per file, two thirds of a whole-repository search. dirReader keeps
// the same guarantees for the common case with about five: it opens each
// directory once, relative to the checkout, checks through /proc that the
// directory is where the listing says (so no component was a symlink), then
// opens plain names in it with O_NOFOLLOW. Anything else (a symlink, a
// directory reached through one, an error) goes to Workspace.Open, which
// applies every check and decides.
//
// The directory is opened with one openat from the checkout's descriptor
// rather than through the os.Root, which would open and close every
// component on the way (a third of a search's system calls). That openat
// may follow a symlink in the middle of the path, even out of the checkout,
// but nothing is read from it before /proc has confirmed the directory is
// the one at exactly that path inside the checkout; otherwise the fallback
// decides.
//
// Deny-listing is not repeated here: the files come from Workspace.Files,
// which drops denied paths, or were already opened once through
// Workspace.Open, and the checks above make sure the file read is the one
// at exactly that path.
type dirReader struct {
	root     *os.Root
	real     string // the checkout with symlinks resolved, as /proc reports it
	fallback openReader
	top      *os.File // the checkout itself, opened through root; nil until needed

	dir    string // the current directory, relative; "" for the top
	opened bool   // whether dir was opened (dirFD says if it can be used)
	dirFD  int    // -1 when dir must go through fallback
}

// newSearchReader returns a reader for one worker. ok is false when the
// fast path cannot be used here (no /proc): then Workspace.Open is used.
func newSearchReader(root *os.Root, real string, open func(string) (*os.File, fs.FileInfo, error)) search.FileReader {
	if root == nil {
		return openReader{open: open}
	}
	return &dirReader{root: root, real: real, fallback: openReader{open: open}, dirFD: -1}
}

func (r *dirReader) Close() {
	r.closeDir()
	if r.top != nil {
		r.top.Close()
		r.top = nil
	}
}

func (r *dirReader) closeDir() {
	if r.dirFD >= 0 {
		syscall.Close(r.dirFD)
	}
	r.opened, r.dirFD = false, -1
}

func (r *dirReader) switchDir(dir string) {
	r.closeDir()
	r.dir, r.opened = dir, true
	if r.top == nil {
		top, err := r.root.Open(".")
		if err != nil {
			return
		}
		r.top = top
	}
	name := dir
	if name == "" {
		name = "."
	}
	fd, err := openat(int(r.top.Fd()), name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC)
	if err != nil {
		return
	}
	want := r.real
	if dir != "" {
		want += "/" + dir
	}
	if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err != nil || target != want {
		syscall.Close(fd)
		return
	}
	r.dirFD = fd
}

// openat retries syscall.Openat on EINTR.
func openat(dirFD int, name string, flags int) (int, error) {
	for {
		fd, err := syscall.Openat(dirFD, name, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func (r *dirReader) Read(rel string, buf []byte, maxSize int64) ([]byte, bool, search.Skip) {
	dir, name := path.Split(rel)
	if len(dir) > 0 {
		dir = dir[:len(dir)-1]
	}
	if dir != r.dir || !r.opened {
		r.switchDir(dir)
	}
	if r.dirFD < 0 || name == "" {
		return r.fallback.Read(rel, buf, maxSize)
	}
	fd, err := openat(r.dirFD, name, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC)
	if err != nil {
		// ELOOP: a symlink, which Open follows inside the checkout and
		// checks against the deny-list. Other errors: Open explains.
		return r.fallback.Read(rel, buf, maxSize)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return buf, false, search.SkipUnreadable
	}
	if st.Size > maxSize {
		return buf, false, search.SkipHuge
	}
	buf, skip := search.ReadAll(fdReader(fd), buf, st.Size, maxSize)
	return buf, false, skip
}

// fdReader reads a raw descriptor, without the poller registration an
// os.File made by os.NewFile would attempt.
type fdReader int

func (fd fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
