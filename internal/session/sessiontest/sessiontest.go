package sessiontest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
)

// Clock is a fake clock the suite hands to the store under test, so dedupe
// expiry and idleness are tested without sleeping. It is safe for
// concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time; pass it as the store's clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Opener opens the store under test over dir (a fresh t.TempDir for each
// case) with now as its clock. Called again with the same dir after Close,
// a durable store must return the same data: that is how the suite
// reopens. A network store can derive a schema or database name from dir.
// The suite closes every store it opens; Close may be called twice.
type Opener func(t *testing.T, dir string, now func() time.Time) session.Store

// Suite describes the backend under test.
type Suite struct {
	Open Opener
	// Durable says the data survives Close and a reopen of the same dir;
	// the survival case runs only then (Memory is not durable).
	Durable bool
	// Shared says Open called again with the same dir while the first
	// store is open gives a second handle on the same data, as a second
	// replica has; the lease races then run across two handles.
	Shared bool
}

// base is the suite's epoch: a fixed time, so failures are reproducible.
var base = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// h is what a case gets: an open store, its clock and a way to reopen it.
type h struct {
	t     *testing.T
	st    session.Store
	clock *Clock
	dir   string
	open  Opener
}

// reopen closes the store and opens it again over the same dir.
func (x *h) reopen() {
	x.t.Helper()
	if err := x.st.Close(); err != nil {
		x.t.Fatalf("Close: %v", err)
	}
	x.st = x.open(x.t, x.dir, x.clock.Now)
	x.t.Cleanup(func() { x.st.Close() })
}

// RunStoreTests runs the contract suite against the backend s describes.
func RunStoreTests(t *testing.T, s Suite) {
	cases := []struct {
		name    string
		durable bool
		run     func(t *testing.T, x *h)
	}{
		{name: "start turn creates session and appends user message", run: testStartTurn},
		{name: "append step appends in order and accumulates usage", run: testAppendStep},
		{name: "end turn counts done turns only once", run: testEndTurn},
		{name: "unfinished lists running and interrupted oldest first", run: testUnfinished},
		{name: "set turn state", run: testSetTurnState},
		{name: "continue turn hands a cut-off turn to a new one", run: testContinueTurn},
		{name: "concurrent continue of one turn succeeds once", run: testConcurrentContinue},
		{name: "replace history", run: testReplaceHistory},
		{name: "set commit", run: testSetCommit},
		{name: "first seen inserts if absent and expires after ttl", run: testFirstSeen},
		{name: "sessions most recent first without history", run: testSessions},
		{name: "purge idle sessions with their turns and expired keys", run: testPurge},
		{name: "concurrent first seen on one key records it once", run: testConcurrentFirstSeen},
		{name: "concurrent writers on many threads", run: testConcurrentWriters},
		{name: "messages round-trip exactly", run: testRoundTrip},
		{name: "returned values do not alias the store", run: testNoAliasing},
		{name: "data survives close and reopen", durable: true, run: testReopen},
	}
	for _, tc := range cases {
		if tc.durable && !s.Durable {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			x := &h{t: t, clock: NewClock(base), dir: t.TempDir(), open: s.Open}
			x.st = s.Open(t, x.dir, x.clock.Now)
			t.Cleanup(func() { x.st.Close() })
			tc.run(t, x)
		})
	}
	runLeaseTests(t, s)
}

var (
	keyA = session.Key{Team: "T1", Channel: "C1", Thread: "1700000000.000100"}
	keyB = session.Key{Team: "T1", Channel: "C1", Thread: "1700000000.000200"}
	keyC = session.Key{Team: "T2", Channel: "D9", Thread: "1700000000.000300"}
)

func user(q string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: q} }

func answer(a string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: a} }

// toolStep is an assistant message with one call and its result.
func toolStep(id, name, args, result string) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: args}}},
		{Role: llm.RoleTool, ToolCallID: id, Content: result},
	}
}

func mustStart(t *testing.T, st session.Store, id string, key session.Key, q string) {
	t.Helper()
	tr := session.Turn{ID: id, Key: key, User: "U1", Question: q, MsgTS: key.Thread}
	if err := st.StartTurn(t.Context(), tr, "repo-a", user(q)); err != nil {
		t.Fatalf("StartTurn(%s): %v", id, err)
	}
}

func mustAppend(t *testing.T, st session.Store, id string, msgs []llm.Message, u llm.Usage) {
	t.Helper()
	if err := st.AppendStep(t.Context(), id, msgs, u); err != nil {
		t.Fatalf("AppendStep(%s): %v", id, err)
	}
}

func mustEnd(t *testing.T, st session.Store, id string, state session.TurnState) {
	t.Helper()
	if err := st.EndTurn(t.Context(), id, state, ""); err != nil {
		t.Fatalf("EndTurn(%s, %s): %v", id, state, err)
	}
}

func mustSession(t *testing.T, st session.Store, key session.Key) session.Session {
	t.Helper()
	s, ok, err := st.Session(t.Context(), key)
	if err != nil || !ok {
		t.Fatalf("Session(%s) = ok %v, err %v; want the session", key, ok, err)
	}
	return s
}

func mustTurn(t *testing.T, st session.Store, id string) session.Turn {
	t.Helper()
	tr, err := st.Turn(t.Context(), id)
	if err != nil {
		t.Fatalf("Turn(%s): %v", id, err)
	}
	return tr
}

func wantErrIs(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: err = %v; want errors.Is %v", what, err, want)
	}
}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}
