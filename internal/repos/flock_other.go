//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package repos

import (
	"errors"
	"os"
)

// tryLock cannot tell here whether another process holds a directory:
// every other owner's worktrees count as live and are never removed.
func tryLock(*os.File) error { return errors.ErrUnsupported }

func openDir(path string) (*os.File, error) { return os.Open(path) }
