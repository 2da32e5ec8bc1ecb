package cite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestFSChecker(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", lines(2))
	dir := t.TempDir()
	writeFile(t, dir, "internal/a.go", lines(10))
	writeFile(t, dir, "README.md", "one\ntwo")
	writeFile(t, dir, "empty.txt", "")
	writeFile(t, dir, "--output=x", lines(1))
	writeFile(t, dir, ".git/config", lines(3))
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("internal/a.go", filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	c, err := NewFSChecker(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tests := []struct {
		path string
		n    int
		err  error
	}{
		{"internal/a.go", 10, nil},
		{"README.md", 2, nil},
		{"empty.txt", 0, nil},
		{"link.go", 10, nil},
		{"--output=x", 1, nil},
		{"internal", 0, ErrIsDir},
		{"missing.go", 0, fs.ErrNotExist},
		{"internal/a.go/x", 0, fs.ErrNotExist},
		{"escape.txt", 0, fs.ErrNotExist},
		{"escdir/secret.txt", 0, fs.ErrNotExist},
		{".git/config", 0, fs.ErrNotExist},
		{"../" + filepath.Base(outside) + "/secret.txt", 0, ErrInvalidPath},
		{"/etc/passwd", 0, ErrInvalidPath},
		{".", 0, ErrInvalidPath},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			n, err := c.Lines(t.Context(), tt.path)
			if n != tt.n || !errors.Is(err, tt.err) || (err != nil) != (tt.err != nil) {
				t.Errorf("Lines(%q) = %d, %v; want %d, %v", tt.path, n, err, tt.n, tt.err)
			}
		})
	}
}

// A FIFO in a checkout opens without blocking and reads as no file, so a
// citation of it cannot hold the check past its deadline.
func TestFSCheckerFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	f, err := NewFSChecker(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := f.Lines(ctx, "pipe"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Lines(pipe) = %v, want a missing file", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Lines on a FIFO still blocked 5 s after its 1 s deadline")
	}
}
