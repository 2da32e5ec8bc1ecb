//go:build linux

package handoff

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A service that is stopped (Ctrl-Z, SIGSTOP) or wedged still has its
// socket: the kernel completes the connection into the listener's backlog
// and SO_PEERCRED names the service's user, but no answer ever comes. The
// caller gives up and runs the call itself instead of waiting forever.
func TestCallGivesUpOnAServiceThatDoesNotAnswer(t *testing.T) {
	defer func(d time.Duration) { answerWait = d }(answerWait)
	answerWait = 200 * time.Millisecond
	for name, accept := range map[string]bool{"never accepts": false, "accepts, never answers": true} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, Dir), 0o700); err != nil {
				t.Fatal(err)
			}
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: Path(dir), Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if accept {
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						defer c.Close()
					}
				}()
			}
			done := make(chan error, 1)
			go func() {
				_, err := Call(context.Background(), dir, Request{Tool: "x"}, nil)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Call = %v, want an error that says run it here", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Call still waits on a service that does not answer")
			}
		})
	}
}
