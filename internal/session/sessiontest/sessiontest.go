// Package sessiontest is the contract every session.Store must meet, as a
// test suite a backend runs against itself (Memory and SQLite today, a
// network database later), so all backends behave the same to the service.
//
// It is imported only from tests; it imports session, llm and go-cmp.
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

func testStartTurn(t *testing.T, x *h) {
	ctx := t.Context()
	if _, ok, err := x.st.Session(ctx, keyA); ok || err != nil {
		t.Fatalf("Session before any turn = ok %v, err %v; want none", ok, err)
	}
	mustStart(t, x.st, "t1", keyA, "where is main?")
	t1 := x.clock.Now()
	x.clock.Advance(time.Minute)
	// A second turn on the same thread keeps the session and its repo.
	if err := x.st.StartTurn(ctx, session.Turn{ID: "t2", Key: keyA, User: "U2", Question: "and tests?", MsgTS: "1700000000.000900"}, "other-repo", user("and tests?")); err != nil {
		t.Fatalf("second StartTurn: %v", err)
	}
	diff(t, "session", session.Session{
		Key: keyA, Repo: "repo-a",
		History: []llm.Message{user("where is main?"), user("and tests?")},
		Created: t1, Updated: x.clock.Now(),
	}, mustSession(t, x.st, keyA))
	diff(t, "turn t2", session.Turn{
		ID: "t2", Key: keyA, State: session.TurnRunning, User: "U2", Question: "and tests?",
		MsgTS: "1700000000.000900", Started: x.clock.Now(),
	}, mustTurn(t, x.st, "t2"))

	// A caller-given start time is kept.
	at := base.Add(-time.Hour)
	if err := x.st.StartTurn(ctx, session.Turn{ID: "t3", Key: keyB, Started: at}, "repo-b", user("q")); err != nil {
		t.Fatal(err)
	}
	if got := mustTurn(t, x.st, "t3").Started; !got.Equal(at) {
		t.Errorf("Started = %v; want the given %v", got, at)
	}

	err := x.st.StartTurn(ctx, session.Turn{ID: "t1", Key: keyA}, "repo-a", user("again"))
	wantErrIs(t, "StartTurn with a known ID", err, session.ErrTurnExists)
	if n := len(mustSession(t, x.st, keyA).History); n != 2 {
		t.Errorf("history after refused StartTurn has %d messages; want 2", n)
	}
	_, err = x.st.Turn(ctx, "nope")
	wantErrIs(t, "Turn(unknown)", err, session.ErrNotFound)
}

func testAppendStep(t *testing.T, x *h) {
	mustStart(t, x.st, "t1", keyA, "q1")
	s1 := toolStep("c1", "list_files", `{}`, "a.go\nb.go")
	s2 := toolStep("c2", "read_file", `{"path":"a.go"}`, "1\tpackage a")
	u1 := llm.Usage{PromptTokens: 100, CachedPromptTokens: 10, CompletionTokens: 5}
	u2 := llm.Usage{PromptTokens: 200, CachedPromptTokens: 90, CompletionTokens: 7}
	u3 := llm.Usage{PromptTokens: 300, CachedPromptTokens: 250, CompletionTokens: 40}
	mustAppend(t, x.st, "t1", s1, u1)
	mustAppend(t, x.st, "t1", s2, u2)
	x.clock.Advance(time.Second)
	mustAppend(t, x.st, "t1", []llm.Message{answer("in a.go")}, u3)
	mustEnd(t, x.st, "t1", session.TurnDone)

	mustStart(t, x.st, "t2", keyA, "q2")
	u4 := llm.Usage{PromptTokens: 1000, CachedPromptTokens: 600, CompletionTokens: 3}
	mustAppend(t, x.st, "t2", []llm.Message{answer("still a.go")}, u4)

	s := mustSession(t, x.st, keyA)
	want := []llm.Message{user("q1")}
	want = append(want, s1...)
	want = append(want, s2...)
	want = append(want, answer("in a.go"), user("q2"), answer("still a.go"))
	diff(t, "history", want, s.History)
	diff(t, "session usage", u1.Add(u2).Add(u3).Add(u4), s.Usage)
	if !s.Updated.Equal(x.clock.Now()) {
		t.Errorf("Updated = %v; want the last write's time %v", s.Updated, x.clock.Now())
	}
	t1 := mustTurn(t, x.st, "t1")
	diff(t, "turn t1 usage", u1.Add(u2).Add(u3), t1.Usage)
	if t1.Steps != 3 {
		t.Errorf("turn t1 Steps = %d; want 3", t1.Steps)
	}
	if t2 := mustTurn(t, x.st, "t2"); t2.Steps != 1 || t2.Usage != u4 {
		t.Errorf("turn t2 = %d steps, usage %+v; want 1 step, %+v", t2.Steps, t2.Usage, u4)
	}

	wantErrIs(t, "AppendStep(unknown turn)", x.st.AppendStep(t.Context(), "nope", s1, u1), session.ErrNotFound)
}

func testEndTurn(t *testing.T, x *h) {
	ctx := t.Context()
	mustStart(t, x.st, "ok", keyA, "q1")
	x.clock.Advance(2 * time.Second)
	mustEnd(t, x.st, "ok", session.TurnDone)
	ended := x.clock.Now()
	mustStart(t, x.st, "bad", keyA, "q2")
	if err := x.st.EndTurn(ctx, "bad", session.TurnFailed, "E-7Q2X"); err != nil {
		t.Fatal(err)
	}
	mustStart(t, x.st, "halt", keyA, "q3")
	mustEnd(t, x.st, "halt", session.TurnStopped)

	if got := mustSession(t, x.st, keyA).Turns; got != 1 {
		t.Errorf("Turns = %d; want 1 (only the done turn counts)", got)
	}
	ok := mustTurn(t, x.st, "ok")
	if ok.State != session.TurnDone || !ok.Ended.Equal(ended) {
		t.Errorf("done turn = state %s, ended %v; want done at %v", ok.State, ok.Ended, ended)
	}
	if bad := mustTurn(t, x.st, "bad"); bad.State != session.TurnFailed || bad.ErrRef != "E-7Q2X" {
		t.Errorf("failed turn = state %s, ErrRef %q; want failed, E-7Q2X", bad.State, bad.ErrRef)
	}

	wantErrIs(t, "EndTurn twice", x.st.EndTurn(ctx, "ok", session.TurnDone, ""), session.ErrTurnEnded)
	wantErrIs(t, "EndTurn after failure", x.st.EndTurn(ctx, "bad", session.TurnDone, ""), session.ErrTurnEnded)
	if got := mustSession(t, x.st, keyA).Turns; got != 1 {
		t.Errorf("Turns after a second EndTurn = %d; want still 1", got)
	}
	wantErrIs(t, "AppendStep after stop", x.st.AppendStep(ctx, "halt", []llm.Message{answer("late")}, llm.Usage{}), session.ErrTurnEnded)
	if n := len(mustSession(t, x.st, keyA).History); n != 3 {
		t.Errorf("history has %d messages; want 3 (a stopped turn's late step is refused)", n)
	}
	wantErrIs(t, "EndTurn(unknown)", x.st.EndTurn(ctx, "nope", session.TurnDone, ""), session.ErrNotFound)

	mustStart(t, x.st, "open", keyA, "q4")
	if err := x.st.EndTurn(ctx, "open", session.TurnRunning, ""); err == nil {
		t.Error("EndTurn with state running succeeded; want an error (not a final state)")
	}
}

func testUnfinished(t *testing.T, x *h) {
	ctx := t.Context()
	for i, id := range []string{"t1", "t2", "t3", "t4", "t5", "t6"} {
		key := []session.Key{keyA, keyB, keyC}[i%3]
		mustStart(t, x.st, id, key, "q "+id)
		x.clock.Advance(time.Second)
	}
	// Started out of ID order: t0 is the oldest.
	if err := x.st.StartTurn(ctx, session.Turn{ID: "t0", Key: keyC, Started: base.Add(-time.Minute)}, "r", user("q t0")); err != nil {
		t.Fatal(err)
	}
	mustEnd(t, x.st, "t1", session.TurnDone)
	mustEnd(t, x.st, "t3", session.TurnFailed)
	mustEnd(t, x.st, "t6", session.TurnStopped)
	if err := x.st.SetTurnState(ctx, "t4", session.TurnInterrupted); err != nil {
		t.Fatal(err)
	}
	got, err := x.st.Unfinished(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var states []session.TurnState
	for _, tr := range got {
		ids = append(ids, tr.ID)
		states = append(states, tr.State)
	}
	diff(t, "unfinished IDs", []string{"t0", "t2", "t4", "t5"}, ids)
	diff(t, "unfinished states", []session.TurnState{session.TurnRunning, session.TurnRunning, session.TurnInterrupted, session.TurnRunning}, states)
}

func testSetTurnState(t *testing.T, x *h) {
	ctx := t.Context()
	mustStart(t, x.st, "t1", keyA, "q")
	for _, st := range []session.TurnState{session.TurnInterrupted, session.TurnRunning} {
		if err := x.st.SetTurnState(ctx, "t1", st); err != nil {
			t.Fatalf("SetTurnState(%s): %v", st, err)
		}
		if got := mustTurn(t, x.st, "t1").State; got != st {
			t.Errorf("state = %s; want %s", got, st)
		}
	}
	// A resumed turn can still be written to and ended.
	mustAppend(t, x.st, "t1", []llm.Message{answer("a")}, llm.Usage{})
	mustEnd(t, x.st, "t1", session.TurnDone)
	wantErrIs(t, "SetTurnState(unknown)", x.st.SetTurnState(ctx, "nope", session.TurnRunning), session.ErrNotFound)
	// An ended turn stays ended: a process that lost it cannot revive it.
	wantErrIs(t, "SetTurnState(ended)", x.st.SetTurnState(ctx, "t1", session.TurnInterrupted), session.ErrTurnEnded)
	if got := mustTurn(t, x.st, "t1").State; got != session.TurnDone {
		t.Errorf("state after SetTurnState on an ended turn = %s; want done", got)
	}
}

func testContinueTurn(t *testing.T, x *h) {
	ctx := t.Context()
	mustStart(t, x.st, "t1", keyA, "q")
	mustAppend(t, x.st, "t1", toolStep("c1", "read_file", `{"path":"a"}`, "A"), llm.Usage{PromptTokens: 10, CompletionTokens: 2})
	if err := x.st.SetTurnState(ctx, "t1", session.TurnInterrupted); err != nil {
		t.Fatal(err)
	}
	before := mustSession(t, x.st, keyA).History
	x.clock.Advance(time.Minute)
	if err := x.st.ContinueTurn(ctx, "t1", session.Turn{ID: "t2"}); err != nil {
		t.Fatalf("ContinueTurn: %v", err)
	}
	old, next := mustTurn(t, x.st, "t1"), mustTurn(t, x.st, "t2")
	if old.State != session.TurnContinued || !old.Ended.Equal(base.Add(time.Minute)) {
		t.Errorf("old turn = %s ended %v; want continued at %v", old.State, old.Ended, base.Add(time.Minute))
	}
	want := session.Turn{ID: "t2", Key: keyA, State: session.TurnRunning, User: "U1", Question: "q", MsgTS: keyA.Thread,
		Started: base.Add(time.Minute), Steps: 1, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}
	diff(t, "continued turn", want, next)
	diff(t, "history after ContinueTurn", before, mustSession(t, x.st, keyA).History)

	// The old turn is fenced off; the new one takes the steps and ends.
	wantErrIs(t, "AppendStep(old)", x.st.AppendStep(ctx, "t1", []llm.Message{answer("late")}, llm.Usage{}), session.ErrTurnEnded)
	wantErrIs(t, "ContinueTurn(old again)", x.st.ContinueTurn(ctx, "t1", session.Turn{ID: "t3"}), session.ErrTurnEnded)
	mustAppend(t, x.st, "t2", []llm.Message{answer("a")}, llm.Usage{})
	mustEnd(t, x.st, "t2", session.TurnDone)
	if s := mustSession(t, x.st, keyA); s.Turns != 1 {
		t.Errorf("Turns = %d; want 1 (a continued turn is not a done one)", s.Turns)
	}
	unf, err := x.st.Unfinished(ctx)
	if err != nil || len(unf) != 0 {
		t.Errorf("Unfinished = %v, %v; want none", unf, err)
	}
	wantErrIs(t, "ContinueTurn(unknown)", x.st.ContinueTurn(ctx, "nope", session.Turn{ID: "t4"}), session.ErrNotFound)
	mustStart(t, x.st, "t5", keyB, "q5")
	wantErrIs(t, "ContinueTurn(to an existing ID)", x.st.ContinueTurn(ctx, "t5", session.Turn{ID: "t2"}), session.ErrTurnExists)
	if got := mustTurn(t, x.st, "t5").State; got != session.TurnRunning {
		t.Errorf("turn after a refused ContinueTurn = %s; want running", got)
	}
}

// testConcurrentContinue is two starts finding the same cut-off turn: only
// one may answer it.
func testConcurrentContinue(t *testing.T, x *h) {
	mustStart(t, x.st, "t1", keyA, "q")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- x.st.ContinueTurn(t.Context(), "t1", session.Turn{ID: fmt.Sprintf("r%d", i)}) })
	}
	wg.Wait()
	close(errs)
	wins := 0
	for err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, session.ErrTurnEnded):
			t.Errorf("ContinueTurn: %v; want nil or ErrTurnEnded", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d concurrent ContinueTurn calls succeeded; want exactly 1", wins, n)
	}
}

func testReplaceHistory(t *testing.T, x *h) {
	ctx := t.Context()
	mustStart(t, x.st, "t1", keyA, "q1")
	mustAppend(t, x.st, "t1", toolStep("c1", "read_file", `{"path":"a"}`, "long body"), llm.Usage{PromptTokens: 9})
	mustAppend(t, x.st, "t1", []llm.Message{answer("a1")}, llm.Usage{})
	mustEnd(t, x.st, "t1", session.TurnDone)

	compacted := []llm.Message{user("q1"), answer("a1")}
	x.clock.Advance(time.Minute)
	if err := x.st.ReplaceHistory(ctx, keyA, compacted); err != nil {
		t.Fatal(err)
	}
	s := mustSession(t, x.st, keyA)
	diff(t, "history after replace", compacted, s.History)
	if s.Turns != 1 || s.Usage.PromptTokens != 9 || !s.Updated.Equal(x.clock.Now()) {
		t.Errorf("replace changed totals or did not touch Updated: %+v", s)
	}
	// Appends go after the replaced history.
	mustStart(t, x.st, "t2", keyA, "q2")
	diff(t, "history after next turn", []llm.Message{user("q1"), answer("a1"), user("q2")}, mustSession(t, x.st, keyA).History)

	wantErrIs(t, "ReplaceHistory(unknown)", x.st.ReplaceHistory(ctx, keyB, compacted), session.ErrNotFound)
}

func testSetCommit(t *testing.T, x *h) {
	ctx := t.Context()
	mustStart(t, x.st, "t1", keyA, "q")
	for _, c := range []string{"0123abcd", "fedc9876"} {
		if err := x.st.SetCommit(ctx, keyA, c); err != nil {
			t.Fatal(err)
		}
		if got := mustSession(t, x.st, keyA).Commit; got != c {
			t.Errorf("Commit = %q; want %q", got, c)
		}
	}
	wantErrIs(t, "SetCommit(unknown)", x.st.SetCommit(ctx, keyB, "x"), session.ErrNotFound)
}

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

// richHistory has every field of llm.Message set somewhere, and text that
// trips naive encodings.
func richHistory() []llm.Message {
	return []llm.Message{
		user("why does `go test` fail? 🤔\n<@U123> \"quoted\" \\ back\tslash"),
		{
			Role:      llm.RoleAssistant,
			Reasoning: "Let me look at the tests first.\n\nThen the CI config.",
			ToolCalls: []llm.ToolCall{
				{ID: "call_1", Name: "read_file", Arguments: `{"path":"ci.yml","offset":10}`},
				{ID: "call_2", Name: "search_code", Arguments: `{"pattern":"t.Fatal\\(", "literal":true}`},
				{ID: "call_3", Name: "read_file", Arguments: `{not json`},
			},
		},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: "10\tjobs:\n11\t  test:\n"},
		{Role: llm.RoleTool, ToolCallID: "call_2", Content: "", IsError: false},
		{Role: llm.RoleTool, ToolCallID: "call_3", Content: "arguments are not valid JSON: invalid character 'n'", IsError: true},
		{Role: llm.RoleAssistant, Content: "The test job needs `-race`.\n\n```yaml\nrun: go test -race ./...\n```", Reasoning: "done"},
		{Role: llm.RoleSystem, Content: "note: unicode \u2028 line separator and NUL-free ütf-8 日本語"},
	}
}

func testRoundTrip(t *testing.T, x *h) {
	ctx := t.Context()
	hist := richHistory()
	mustStart(t, x.st, "t1", keyA, hist[0].Content)
	mustAppend(t, x.st, "t1", hist[1:5], llm.Usage{})
	mustAppend(t, x.st, "t1", hist[5:], llm.Usage{})
	diff(t, "history after appends", hist, mustSession(t, x.st, keyA).History)

	if err := x.st.ReplaceHistory(ctx, keyA, hist[1:]); err != nil {
		t.Fatal(err)
	}
	diff(t, "history after replace", hist[1:], mustSession(t, x.st, keyA).History)
}

func testNoAliasing(t *testing.T, x *h) {
	hist := richHistory()
	mustStart(t, x.st, "t1", keyA, hist[0].Content)
	in := hist[1:5]
	mustAppend(t, x.st, "t1", in, llm.Usage{})
	in[0].ToolCalls[0].Name = "changed by caller"
	in[1].Content = "changed by caller"

	got := mustSession(t, x.st, keyA)
	got.History[1].ToolCalls[1].Arguments = "changed by reader"
	got.History[0].Content = "changed by reader"

	diff(t, "history", richHistory()[:5], mustSession(t, x.st, keyA).History)
}

func testReopen(t *testing.T, x *h) {
	ctx := t.Context()
	hist := richHistory()
	mustStart(t, x.st, "done", keyA, hist[0].Content)
	mustAppend(t, x.st, "done", hist[1:], llm.Usage{PromptTokens: 70, CachedPromptTokens: 7, CompletionTokens: 3})
	mustEnd(t, x.st, "done", session.TurnDone)
	if err := x.st.SetCommit(ctx, keyA, "c0ffee"); err != nil {
		t.Fatal(err)
	}
	mustStart(t, x.st, "running", keyB, "q")
	if err := x.st.SetTurnState(ctx, "running", session.TurnInterrupted); err != nil {
		t.Fatal(err)
	}
	if _, err := x.st.FirstSeen(ctx, "Ev1", time.Hour); err != nil {
		t.Fatal(err)
	}
	wantA := mustSession(t, x.st, keyA)
	wantDone := mustTurn(t, x.st, "done")
	wantUnfinished, err := x.st.Unfinished(ctx)
	if err != nil {
		t.Fatal(err)
	}

	x.reopen()
	diff(t, "session after reopen", wantA, mustSession(t, x.st, keyA))
	diff(t, "turn after reopen", wantDone, mustTurn(t, x.st, "done"))
	gotUnfinished, err := x.st.Unfinished(ctx)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "unfinished after reopen", wantUnfinished, gotUnfinished)
	if again, _ := x.st.FirstSeen(ctx, "Ev1", time.Hour); again {
		t.Error("a dedupe key was forgotten across reopen")
	}
	// The reopened store keeps writing where it left off.
	if err := x.st.SetTurnState(ctx, "running", session.TurnRunning); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, x.st, "running", []llm.Message{answer("a")}, llm.Usage{})
	diff(t, "history after reopen and append", []llm.Message{user("q"), answer("a")}, mustSession(t, x.st, keyB).History)
	if err := x.st.Ping(ctx); err != nil {
		t.Errorf("Ping after reopen: %v", err)
	}
}
