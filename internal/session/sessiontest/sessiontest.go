package sessiontest

import (
	"errors"
	"fmt"
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
		{name: "session info is the session without its history", run: testSessionInfo},
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
	runFeedbackTests(t, s)
	runUsageTests(t, s)
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

// The cases for sessions as a whole: dedupe keys, listing, retention and
// concurrency.

func testFirstSeen(t *testing.T, x *h) {
	ttl := 10 * time.Minute
	steps := []struct {
		name    string
		advance time.Duration
		key     string
		want    bool
	}{
		{"first", 0, "Ev1", true},
		{"repeat", 0, "Ev1", false},
		{"other key", 0, "C1/1700000000.000100", true},
		{"just before expiry", ttl - time.Second, "Ev1", false},
		{"at expiry", time.Second, "Ev1", true},
		{"recorded again", time.Second, "Ev1", false},
		{"other key expired too", 0, "C1/1700000000.000100", true},
	}
	for _, s := range steps {
		x.clock.Advance(s.advance)
		got, err := x.st.FirstSeen(t.Context(), s.key, ttl)
		if err != nil || got != s.want {
			t.Errorf("%s: FirstSeen(%q) = %v, %v; want %v", s.name, s.key, got, err, s.want)
		}
	}
}

func testSessionInfo(t *testing.T, x *h) {
	ctx := t.Context()
	if _, ok, err := x.st.SessionInfo(ctx, keyA); ok || err != nil {
		t.Fatalf("SessionInfo before any turn = ok %v, err %v; want none", ok, err)
	}
	mustStart(t, x.st, "t1", keyA, "q1")
	mustAppend(t, x.st, "t1", []llm.Message{answer("a1")}, llm.Usage{PromptTokens: 100, CachedPromptTokens: 10, CompletionTokens: 5})
	mustEnd(t, x.st, "t1", session.TurnDone)
	x.clock.Advance(time.Minute)
	if err := x.st.SetCommit(ctx, keyA, "0123abcd"); err != nil {
		t.Fatal(err)
	}
	got, ok, err := x.st.SessionInfo(ctx, keyA)
	if !ok || err != nil {
		t.Fatalf("SessionInfo = ok %v, err %v; want the session", ok, err)
	}
	want := mustSession(t, x.st, keyA)
	if len(want.History) != 2 {
		t.Fatalf("history has %d messages; want 2", len(want.History))
	}
	want.History = nil
	diff(t, "session info", want, got)
	if _, ok, err := x.st.SessionInfo(ctx, keyB); ok || err != nil {
		t.Errorf("SessionInfo of another thread = ok %v, err %v; want none", ok, err)
	}
}

func testSessions(t *testing.T, x *h) {
	ctx := t.Context()
	for _, k := range []session.Key{keyB, keyA, keyC} {
		mustStart(t, x.st, "t-"+k.Thread, k, "q")
		x.clock.Advance(time.Minute)
	}
	// Touching B makes it the most recent.
	if err := x.st.SetCommit(ctx, keyB, "abc"); err != nil {
		t.Fatal(err)
	}
	all, err := x.st.Sessions(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []session.Key
	for _, s := range all {
		keys = append(keys, s.Key)
		if s.History != nil {
			t.Errorf("Sessions returned history for %s", s.Key)
		}
	}
	diff(t, "order", []session.Key{keyB, keyC, keyA}, keys)
	if all[0].Commit != "abc" || all[0].Repo != "repo-a" || !all[0].Updated.Equal(x.clock.Now()) {
		t.Errorf("Sessions()[0] = %+v; want commit, repo and Updated filled", all[0])
	}
	two, err := x.st.Sessions(ctx, 2)
	if err != nil || len(two) != 2 || two[1].Key != keyC {
		t.Errorf("Sessions(2) = %d sessions, err %v; want the 2 most recent", len(two), err)
	}
}

func testPurge(t *testing.T, x *h) {
	ctx := t.Context()
	mustStart(t, x.st, "old", keyA, "q")
	mustStart(t, x.st, "old-open", keyA, "q2")
	if _, err := x.st.FirstSeen(ctx, "short", time.Minute); err != nil {
		t.Fatal(err)
	}
	x.clock.Advance(time.Hour)
	cut := x.clock.Now()
	mustStart(t, x.st, "new", keyB, "q")
	if _, err := x.st.FirstSeen(ctx, "long", 2*time.Hour); err != nil {
		t.Fatal(err)
	}

	n, err := x.st.Purge(ctx, cut)
	if err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v; want 1 session deleted", n, err)
	}
	if _, ok, _ := x.st.Session(ctx, keyA); ok {
		t.Error("idle session survived Purge")
	}
	mustSession(t, x.st, keyB)
	for _, id := range []string{"old", "old-open"} {
		_, err := x.st.Turn(ctx, id)
		wantErrIs(t, "Turn of a purged session", err, session.ErrNotFound)
	}
	un, err := x.st.Unfinished(ctx)
	if err != nil || len(un) != 1 || un[0].ID != "new" {
		t.Errorf("Unfinished after Purge = %v, %v; want only the live turn", un, err)
	}
	if again, _ := x.st.FirstSeen(ctx, "long", time.Hour); again {
		t.Error("Purge dropped a dedupe key that had not expired")
	}
	if again, _ := x.st.FirstSeen(ctx, "short", time.Hour); !again {
		t.Error("an expired dedupe key was still seen")
	}
	// The purged thread can start again from scratch.
	mustStart(t, x.st, "fresh", keyA, "hello again")
	diff(t, "history of a restarted thread", []llm.Message{user("hello again")}, mustSession(t, x.st, keyA).History)
}

func testConcurrentFirstSeen(t *testing.T, x *h) {
	const n = 20
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		wins  = make(chan bool, n)
		errs  = make(chan error, n)
	)
	for range n {
		wg.Go(func() {
			<-start
			ok, err := x.st.FirstSeen(t.Context(), "Ev-race", time.Hour)
			wins <- ok
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(wins)
	close(errs)
	got := 0
	for ok := range wins {
		if ok {
			got++
		}
	}
	for err := range errs {
		if err != nil {
			t.Errorf("FirstSeen: %v", err)
		}
	}
	if got != 1 {
		t.Errorf("%d of %d concurrent FirstSeen calls recorded the key; want exactly 1", got, n)
	}
}

// testConcurrentWriters runs many turns at once, as the service does with
// one worker per thread: no write may fail with a busy or locked error and
// none may be lost.
func testConcurrentWriters(t *testing.T, x *h) {
	const threads, steps = 12, 8
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	for i := range threads {
		wg.Go(func() {
			ctx := t.Context()
			key := session.Key{Team: "T", Channel: "C", Thread: fmt.Sprintf("1700000000.%06d", i)}
			id := fmt.Sprintf("turn-%d", i)
			if err := x.st.StartTurn(ctx, session.Turn{ID: id, Key: key}, "r", user("q")); err != nil {
				errs <- err
				return
			}
			for s := range steps {
				msgs := toolStep(fmt.Sprintf("c%d", s), "read_file", `{}`, "x")
				if err := x.st.AppendStep(ctx, id, msgs, llm.Usage{PromptTokens: 1}); err != nil {
					errs <- err
					return
				}
				if _, err := x.st.FirstSeen(ctx, fmt.Sprintf("%s/%d", id, s), time.Hour); err != nil {
					errs <- err
					return
				}
			}
			errs <- x.st.EndTurn(ctx, id, session.TurnDone, "")
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent writer: %v", err)
		}
	}
	all, err := x.st.Sessions(t.Context(), 0)
	if err != nil || len(all) != threads {
		t.Fatalf("Sessions = %d, %v; want %d", len(all), err, threads)
	}
	for _, s := range all {
		if s.Turns != 1 || s.Usage.PromptTokens != steps {
			t.Errorf("session %s: Turns %d, prompt tokens %d; want 1, %d", s.Key, s.Turns, s.Usage.PromptTokens, steps)
		}
		if h := mustSession(t, x.st, s.Key).History; len(h) != 1+2*steps {
			t.Errorf("session %s: %d messages; want %d", s.Key, len(h), 1+2*steps)
		}
	}
}
