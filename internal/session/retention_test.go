package session

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// TestRunRetention runs the loop on synctest's fake clock: a session left
// idle is purged at the first tick after it passes the idle limit, one that
// keeps being written to survives, and cancelling stops the loop.
func TestRunRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		st := NewMemory() // its clock is time.Now, fake inside the bubble
		idleKey := Key{Team: "T", Channel: "C", Thread: "idle"}
		liveKey := Key{Team: "T", Channel: "C", Thread: "live"}
		for _, k := range []Key{idleKey, liveKey} {
			if err := st.StartTurn(ctx, Turn{ID: k.Thread, Key: k}, "r", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.FirstSeen(ctx, "ev", time.Minute); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { RunRetention(ctx, st, time.Hour, 90*time.Minute, nil); close(done) }()

		exists := func(k Key) bool { _, ok, _ := st.Session(ctx, k); return ok }
		for hour := 1; hour <= 2; hour++ {
			time.Sleep(time.Hour - time.Second)
			if err := st.SetCommit(ctx, liveKey, "c"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			if want := hour < 2; exists(idleKey) != want {
				t.Errorf("after %dh: idle session exists = %v; want %v (idle limit 90m, ticks hourly)", hour, !want, want)
			}
			if !exists(liveKey) {
				t.Errorf("after %dh: a session written every hour was purged", hour)
			}
		}
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Error("RunRetention did not return after its context was cancelled")
		}
	})
}
