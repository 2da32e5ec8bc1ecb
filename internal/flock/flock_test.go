//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package flock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A second open of a locked file, even in this process, does not get the
// lock, and gets it once the holder closes.
func TestTryLockIsPerOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l")
	a, b := open(t, path), open(t, path)
	if err := TryLock(a); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if err := TryLock(b); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open's lock = %v, want ErrLocked", err)
	}
	a.Close()
	if err := TryLock(b); err != nil {
		t.Fatalf("lock after the holder closed: %v", err)
	}
}

// Wait says once that it waits, returns when the holder lets go, and gives
// up with ctx.
func TestWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l")
	holder := open(t, path)
	if err := TryLock(holder); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := Wait(ctx, open(t, path), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a held lock until the deadline = %v, want DeadlineExceeded", err)
	}

	waiting := make(chan struct{})
	calls := 0
	done := make(chan error, 1)
	go func() {
		done <- Wait(t.Context(), open(t, path), func() { calls++; close(waiting) })
	}()
	<-waiting
	select {
	case err := <-done:
		t.Fatalf("Wait returned while the lock was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	holder.Close()
	if err := <-done; err != nil {
		t.Fatalf("Wait after the holder closed: %v", err)
	}
	if calls != 1 {
		t.Errorf("onWait called %d times, want 1", calls)
	}
}
