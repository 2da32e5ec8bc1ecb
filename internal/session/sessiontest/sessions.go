package sessiontest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
)

// The Store contract's cases for sessions as a whole: dedupe keys,
// listing, retention, concurrency, exact round trips and durability.

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
