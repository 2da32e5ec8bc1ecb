//go:build linux

package handoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		ok   bool
	}{
		{"ours", 0o750, 0, true},
		{"writable by all", 0o777, 0, false},
		{"writable by the group", 0o770, 0, false},
		{"sticky and writable by all", 0o777 | os.ModeSticky, 0, true},
		{"another user's", 0o755, 12345, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			if tc.uid != 0 {
				if err := os.Chown(dir, tc.uid, tc.uid); err != nil {
					t.Fatal(err)
				}
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
