package handoff

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// steadyDir says why dataDir's entries could be renamed by another user,
// if they could: it belongs to another user (root aside), or others may
// write to it without the sticky bit, or a group other than the process's
// own may. Such a user could swap Dir for a symlink between privateDir's
// check and the lock, the removal and the chmod that follow, and have them
// made through it. The process's own group may write to it: that is a
// Kubernetes volume with fsGroup (the pod's group), or, with a group per
// user as Linux distributions make them, the service's user alone.
func steadyDir(dataDir string) error {
	fi, err := os.Stat(dataDir)
	if err != nil {
		return fmt.Errorf("check the data directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && st.Uid != 0 && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("the data directory %s belongs to another user (uid %d): no socket for bot tool there", dataDir, st.Uid)
	}
	writable := fi.Mode().Perm() & 0o002
	if ok && int(st.Gid) != os.Getgid() {
		writable |= fi.Mode().Perm() & 0o020
	}
	if writable != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("the data directory %s may be changed by other users (mode %v): no socket for bot tool there; chmod o-w,g-w it", dataDir, fi.Mode().Perm())
	}
	return nil
}

// openLock opens the socket's lock at path, ours: one that another user
// made while Dir was open to others (privateDir closes it only now) is
// replaced, since its maker could hold a flock on it forever and keep the
// service from taking calls.
func openLock(path string) (*os.File, error) {
	for range 2 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open the socket's lock: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("check the socket's lock: %w", err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) == os.Getuid() {
			return f, nil
		}
		f.Close()
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove another user's lock: %w", err)
		}
	}
	return nil, fmt.Errorf("the socket's lock %s belongs to another user", path)
}

// privateDir makes dir, a directory this user owns that no one else can
// enter, or says why it cannot be one.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create the socket's directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check the socket's directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the socket's directory %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("the socket's directory %s belongs to another user (uid %d)", dir, st.Uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("restrict the socket's directory: %w", err)
		}
	}
	return nil
}
