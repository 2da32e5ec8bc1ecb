//go:build linux

package handoff

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/askrepo/askrepo/internal/flock"
)

// Whoever may rename entries of the data directory can swap Dir for a
// symlink between Listen's check and its use, and have the service create
// its lock, remove a file and chmod through it. A data directory that
// another user owns, or may write to without the sticky bit, gets no
// socket; one of ours, or a sticky one like /tmp, does.
func TestListenRefusesADataDirectoryOthersCanChange(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	for _, tc := range []struct {
		name string
		mode os.FileMode
		uid  int
		gid  int // -1: left as made
		ok   bool
	}{
		{"ours", 0o750, 0, -1, true},
		{"writable by all", 0o777, 0, -1, false},
		// A Kubernetes volume with fsGroup: group-writable and setgid,
		// the group the pod runs as.
		{"writable by our own group", 0o770 | os.ModeSetgid, 0, os.Getgid(), true},
		{"writable by another group", 0o770, 0, 12345, false},
		{"sticky and writable by all", 0o777 | os.ModeSticky, 0, -1, true},
		{"another user's", 0o755, 12345, 12345, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			if tc.uid != 0 || tc.gid != -1 {
				if err := os.Chown(dir, tc.uid, tc.gid); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(dir, tc.mode); err != nil { // chown clears setgid
				t.Fatal(err)
			}
			srv, err := Listen(dir, echo, Options{})
			if tc.ok {
				if err != nil {
					t.Fatalf("Listen: %v", err)
				}
				srv.Close()
				return
			}
			if err == nil {
				srv.Close()
				t.Fatal("Listen made a socket in a data directory another user can change")
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("Listen = %v, want an error naming %s", err, dir)
			}
		})
	}
}

// A lock file in Dir that is not ours was left there while the directory
// was open to others (Listen closes it to 0700 only then): its maker may
// hold a flock on it forever to keep the service from taking calls. It is
// replaced by one of ours.
func TestListenReplacesAStrangersLock(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	dir := t.TempDir()
	run := filepath.Join(dir, Dir)
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(run, 0o777)
	held, err := os.OpenFile(filepath.Join(run, lockFile), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := held.Chown(12345, 12345); err != nil {
		t.Fatal(err)
	}
	if err := flock.TryLock(held); err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(dir, echo, Options{})
	if err != nil {
		t.Fatalf("Listen with another user's lock held in its directory: %v", err)
	}
	defer srv.Close()
	fi, err := os.Stat(filepath.Join(run, lockFile))
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the lock is %v, %v; want one of ours", fi, err)
	}
}

// bot tool talks only to a service of its own user: a socket at the path
// that another user listens on (a data directory it could change, or a
// symlink it left) is refused before a byte is sent.
func TestCallRefusesAnotherUsersSocket(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to listen as another user")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, Dir), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(dir), dir, filepath.Join(dir, Dir)} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	// SO_PEERCRED names the user that called listen.
	if err := syscall.Setresuid(-1, 65534, -1); err != nil {
		t.Fatalf("become nobody: %v", err)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = syscall.Bind(fd, &syscall.SockaddrUnix{Name: Path(dir)}); err == nil {
			err = syscall.Listen(fd, 8)
		}
	}
	if err := syscall.Setresuid(-1, 0, -1); err != nil {
		t.Fatalf("become root again: %v", err)
	}
	if err != nil {
		t.Fatalf("listen as nobody: %v", err)
	}
	defer syscall.Close(fd)
	got := make(chan []byte, 1)
	go func() {
		nfd, _, err := syscall.Accept(fd)
		if err != nil {
			got <- nil
			return
		}
		defer syscall.Close(nfd)
		b := make([]byte, 512)
		n, _ := syscall.Read(nfd, b)
		got <- b[:max(n, 0)]
	}()
	if _, err := Call(t.Context(), dir, Request{Key: "k", Tool: "read_file"}, nil); !errors.Is(err, ErrStranger) {
		t.Fatalf("Call to another user's socket = %v, want ErrStranger", err)
	}
	if b := <-got; len(b) != 0 {
		t.Errorf("another user's socket read %q", b)
	}
}
