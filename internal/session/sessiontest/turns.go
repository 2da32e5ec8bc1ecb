package sessiontest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
)

// The Store contract's cases for turns and their history, down to the
// exact bytes of each message and their survival across a reopen.

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
		// The turn names the repository it answers from; the session keeps its own.
		Repo:  "other-repo",
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
	want := session.Turn{ID: "t2", Key: keyA, State: session.TurnRunning, User: "U1", Question: "q", Repo: "repo-a", MsgTS: keyA.Thread,
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
