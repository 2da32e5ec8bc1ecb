// Package flock takes advisory locks on open files, so that processes
// sharing a data directory know which of them is alive: a flock belongs to
// the open file (not the process), and the kernel lets it go when the
// process does, however it ends, so a crash never leaves a stale lock.
package flock

import (
	"context"
	"errors"
	"os"
	"time"
)

// ErrLocked is TryLock's answer for a lock another open file holds.
var ErrLocked = errors.New("locked by a live process")

// Wait takes an exclusive lock on f, waiting while another open file holds
// it, until ctx is done. onWait, if not nil, is called once, the first time
// it has to wait, so the caller can say what it is waiting for. Where locks
// are not supported it returns at once with nil: nothing can be told apart
// there, and waiting would be forever.
func Wait(ctx context.Context, f *os.File, onWait func()) error {
	wait := 20 * time.Millisecond
	for waited := false; ; waited = true {
		err := TryLock(f)
		if err == nil || errors.Is(err, errors.ErrUnsupported) {
			return nil
		}
		if !errors.Is(err, ErrLocked) {
			return err
		}
		if !waited && onWait != nil {
			onWait()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}
