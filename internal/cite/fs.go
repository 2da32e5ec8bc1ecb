package cite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/askrepo/askrepo/internal/ctxio"
)

// FSChecker is a Checker over a plain directory, for checkouts that are not
// git repositories. It opens files through an os.Root, so a path or a
// symlink that leads outside the directory is refused (reported as missing:
// it is not part of the repository), and it hides .git. Safe for concurrent
// use; Close it when done.
type FSChecker struct {
	root *os.Root
}

var _ Checker = (*FSChecker)(nil)

// NewFSChecker opens dir.
func NewFSChecker(dir string) (*FSChecker, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("fs checker: %w", err)
	}
	return &FSChecker{root: root}, nil
}

// Close releases the directory.
func (f *FSChecker) Close() error { return f.root.Close() }

// Lines counts the lines of path under the directory.
func (f *FSChecker) Lines(ctx context.Context, path string) (int, error) {
	if !fs.ValidPath(path) || path == "." || strings.ContainsFunc(path, isControl) {
		return 0, &fs.PathError{Op: "lines", Path: path, Err: ErrInvalidPath}
	}
	if path == ".git" || strings.HasPrefix(path, ".git/") {
		return 0, &fs.PathError{Op: "lines", Path: path, Err: fs.ErrNotExist}
	}
	// Non-blocking, so that a FIFO (or a device) opens at once and is
	// refused as not a file below, instead of holding the check forever.
	file, err := f.root.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, &fs.PathError{Op: "lines", Path: path, Err: fs.ErrNotExist}
		}
		// A file in place of a directory, a symlink loop, and os.Root's
		// refusal of a symlink out of the directory (the one error here that
		// is not an errno) all mean the path is not a file of the
		// repository. Other errnos (EIO, EACCES) are real failures.
		var pe *fs.PathError
		var errno syscall.Errno
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) ||
			errors.As(err, &pe) && !errors.As(err, &errno) {
			return 0, &fs.PathError{Op: "lines", Path: path, Err: fmt.Errorf("%w: %w", err, fs.ErrNotExist)}
		}
		return 0, fmt.Errorf("lines %s: %w", path, err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return 0, fmt.Errorf("lines %s: %w", path, err)
	}
	if st.IsDir() {
		return 0, &fs.PathError{Op: "lines", Path: path, Err: ErrIsDir}
	}
	if !st.Mode().IsRegular() {
		return 0, &fs.PathError{Op: "lines", Path: path, Err: fs.ErrNotExist}
	}
	n, last, err := countLines(ctxio.Reader{Ctx: ctx, R: file}, make([]byte, 32<<10))
	if err != nil {
		return 0, fmt.Errorf("lines %s: %w", path, err)
	}
	if last != '\n' && last != 0 {
		n++
	}
	return n, nil
}
