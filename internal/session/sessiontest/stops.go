package sessiontest

import (
	"testing"

	"github.com/askrepo/askrepo/internal/session"
)

func requestStop(t *testing.T, b session.Backend, turnID, user string, want bool) {
	t.Helper()
	got, err := b.RequestStop(t.Context(), turnID, user)
	if err != nil || got != want {
		t.Errorf("RequestStop(%s, %s) = %v, %v; want %v", turnID, user, got, err, want)
	}
}

func stopRequested(t *testing.T, b session.Backend, turnID, want string) {
	t.Helper()
	got, err := b.StopRequested(t.Context(), turnID)
	if err != nil || got != want {
		t.Errorf("StopRequested(%s) = %q, %v; want %q", turnID, got, err, want)
	}
}

func testStopRequest(t *testing.T, x *h, peer session.Backend) {
	a := backend(t, x.st)
	mustStart(t, x.st, "t1", keyA, "Q1")
	mustStart(t, x.st, "t2", keyB, "Q2")
	stopRequested(t, a, "t1", "")

	// The click lands on the peer; the replica running t1 sees who it was.
	requestStop(t, peer, "t1", "U7", true)
	stopRequested(t, a, "t1", "U7")
	requestStop(t, peer, "t1", "U8", true) // a second click: still running, first user kept
	stopRequested(t, a, "t1", "U7")
	stopRequested(t, a, "t2", "") // other turns are untouched

	// Ended, unknown, or cut off and continued under another ID: nothing.
	mustEnd(t, x.st, "t2", session.TurnDone)
	requestStop(t, peer, "t2", "U7", false)
	stopRequested(t, a, "t2", "")
	requestStop(t, peer, "nope", "U7", false)
	stopRequested(t, a, "nope", "")
	mustStart(t, x.st, "t3", keyC, "Q3")
	if err := x.st.SetTurnState(t.Context(), "t3", session.TurnInterrupted); err != nil {
		t.Fatal(err)
	}
	requestStop(t, peer, "t3", "U7", false)
	stopRequested(t, a, "t3", "")
}
