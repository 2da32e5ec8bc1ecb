//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package flock

import (
	"errors"
	"os"
)

// TryLock cannot tell here whether another process holds a file: callers
// treat errors.ErrUnsupported as "maybe live".
func TryLock(*os.File) error { return errors.ErrUnsupported }

// OpenDir opens the directory at path.
func OpenDir(path string) (*os.File, error) { return os.Open(path) }
