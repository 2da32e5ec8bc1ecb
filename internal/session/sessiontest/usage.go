package sessiontest

import (
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
)

// runUsageTests is the contract of session.UsageTotals: the sums budgets
// and the usage report read, over the same store every replica writes.
func runUsageTests(t *testing.T, s Suite) {
	t.Run("usage totals by group, period and filter", func(t *testing.T) {
		x := &h{t: t, clock: NewClock(base), dir: t.TempDir(), open: s.Open}
		x.st = s.Open(t, x.dir, x.clock.Now)
		t.Cleanup(func() { x.st.Close() })
		testUsageTotals(t, x)
	})
	if !s.Shared {
		return
	}
	t.Run("usage totals are the same through a second handle", func(t *testing.T) {
		x := &h{t: t, clock: NewClock(base), dir: t.TempDir(), open: s.Open}
		x.st = s.Open(t, x.dir, x.clock.Now)
		t.Cleanup(func() { x.st.Close() })
		peer := s.Open(t, x.dir, x.clock.Now)
		t.Cleanup(func() { peer.Close() })
		usageTurn(t, x.st, "a1", keyA, "U1", "repo-a", "m1", llm.Usage{PromptTokens: 10, CompletionTokens: 1}, session.TurnDone)
		usageTurn(t, peer, "b1", keyB, "U1", "repo-a", "m1", llm.Usage{PromptTokens: 20, CompletionTokens: 2}, session.TurnRunning)
		want := []session.UsageRow{{Group: "U1", Model: "m1", Turns: 2, Answers: 1, Usage: llm.Usage{PromptTokens: 30, CompletionTokens: 3}}}
		for _, st := range []session.Store{x.st, peer} {
			diff(t, "totals by user", want, usageTotals(t, st, session.UsageFilter{Since: base, By: session.UsageByUser}))
		}
	})
}

func usageTotals(t *testing.T, st session.Store, f session.UsageFilter) []session.UsageRow {
	t.Helper()
	u, ok := st.(session.UsageTotals)
	if !ok {
		t.Fatalf("%T does not implement session.UsageTotals; every store must", st)
	}
	rows, err := u.UsageTotals(t.Context(), f)
	if err != nil {
		t.Fatalf("UsageTotals(%+v): %v", f, err)
	}
	return rows
}

// usageTurn stores one turn of one step with usage u, left in state.
func usageTurn(t *testing.T, st session.Store, id string, key session.Key, user, repo, model string, u llm.Usage, state session.TurnState) {
	t.Helper()
	tr := session.Turn{ID: id, Key: key, User: user, Model: model, Question: "q " + id}
	if err := st.StartTurn(t.Context(), tr, repo, llm.Message{Role: llm.RoleUser, Content: "q " + id}); err != nil {
		t.Fatalf("StartTurn(%s): %v", id, err)
	}
	mustAppend(t, st, id, []llm.Message{answer("a " + id)}, u)
	if state.Ended() {
		mustEnd(t, st, id, state)
	}
}

func u(p, c, o int) llm.Usage {
	return llm.Usage{PromptTokens: p, CachedPromptTokens: c, CompletionTokens: o}
}

// storeUsageTurns stores turns before, in and after the period it returns.
func storeUsageTurns(t *testing.T, x *h) (since, until time.Time) {
	st := x.st
	// Before the period: never counted.
	usageTurn(t, st, "old", keyA, "U1", "repo-a", "m1", u(1000, 0, 1000), session.TurnDone)
	x.clock.Advance(time.Hour)
	since = x.clock.Now() // a turn started exactly at Since counts
	usageTurn(t, st, "a1", keyA, "U1", "repo-a", "m1", u(100, 40, 10), session.TurnDone)
	usageTurn(t, st, "a2", keyA, "U2", "repo-b", "m2", u(200, 0, 20), session.TurnFailed)
	usageTurn(t, st, "c1", keyC, "U2", "repo-b", "m1", u(300, 100, 30), session.TurnRunning)
	// Cut off and continued: the successor carries the tokens, once.
	usageTurn(t, st, "cut", keyB, "U1", "repo-a", "m1", u(50, 0, 5), session.TurnRunning)
	if err := st.ContinueTurn(t.Context(), "cut", session.Turn{ID: "cont"}); err != nil {
		t.Fatalf("ContinueTurn: %v", err)
	}
	mustAppend(t, st, "cont", []llm.Message{answer("rest")}, u(7, 0, 1))
	mustEnd(t, st, "cont", session.TurnDone)
	x.clock.Advance(time.Hour)
	until = x.clock.Now() // a turn started exactly at Until does not
	usageTurn(t, st, "late", keyA, "U1", "repo-a", "m1", u(9999, 0, 9999), session.TurnDone)
	return since, until
}

func testUsageTotals(t *testing.T, x *h) {
	st := x.st
	since, until := storeUsageTurns(t, x)
	if got := mustTurn(t, st, "cont"); got.Repo != "repo-a" || got.Model != "m1" {
		t.Errorf("continued turn has repo %q model %q; want those of the turn it continues, repo-a m1", got.Repo, got.Model)
	}
	period := session.UsageFilter{Since: since, Until: until}
	cases := []struct {
		name string
		f    func(f session.UsageFilter) session.UsageFilter
		want []session.UsageRow
	}{
		{"all, per model", func(f session.UsageFilter) session.UsageFilter { return f }, []session.UsageRow{
			{Model: "m1", Turns: 3, Answers: 2, Usage: u(457, 140, 46)},
			{Model: "m2", Turns: 1, Answers: 0, Usage: u(200, 0, 20)},
		}},
		{"by channel", func(f session.UsageFilter) session.UsageFilter { f.By = session.UsageByChannel; return f }, []session.UsageRow{
			{Group: "C1", Model: "m1", Turns: 2, Answers: 2, Usage: u(157, 40, 16)},
			{Group: "C1", Model: "m2", Turns: 1, Usage: u(200, 0, 20)},
			{Group: "D9", Model: "m1", Turns: 1, Usage: u(300, 100, 30)},
		}},
		{"by user", func(f session.UsageFilter) session.UsageFilter { f.By = session.UsageByUser; return f }, []session.UsageRow{
			{Group: "U1", Model: "m1", Turns: 2, Answers: 2, Usage: u(157, 40, 16)},
			{Group: "U2", Model: "m1", Turns: 1, Usage: u(300, 100, 30)},
			{Group: "U2", Model: "m2", Turns: 1, Usage: u(200, 0, 20)},
		}},
		{"by repo", func(f session.UsageFilter) session.UsageFilter { f.By = session.UsageByRepo; return f }, []session.UsageRow{
			{Group: "repo-a", Model: "m1", Turns: 2, Answers: 2, Usage: u(157, 40, 16)},
			{Group: "repo-b", Model: "m1", Turns: 1, Usage: u(300, 100, 30)},
			{Group: "repo-b", Model: "m2", Turns: 1, Usage: u(200, 0, 20)},
		}},
		{"by model", func(f session.UsageFilter) session.UsageFilter { f.By = session.UsageByModel; return f }, []session.UsageRow{
			{Group: "m1", Model: "m1", Turns: 3, Answers: 2, Usage: u(457, 140, 46)},
			{Group: "m2", Model: "m2", Turns: 1, Usage: u(200, 0, 20)},
		}},
		{"one channel", func(f session.UsageFilter) session.UsageFilter { f.Team, f.Channel = "T1", "C1"; return f }, []session.UsageRow{
			{Model: "m1", Turns: 2, Answers: 2, Usage: u(157, 40, 16)},
			{Model: "m2", Turns: 1, Usage: u(200, 0, 20)},
		}},
		{"same channel ID, other team", func(f session.UsageFilter) session.UsageFilter { f.Team, f.Channel = "T2", "C1"; return f }, nil},
		{"one user", func(f session.UsageFilter) session.UsageFilter { f.User = "U2"; return f }, []session.UsageRow{
			{Model: "m1", Turns: 1, Usage: u(300, 100, 30)},
			{Model: "m2", Turns: 1, Usage: u(200, 0, 20)},
		}},
		{"one repo", func(f session.UsageFilter) session.UsageFilter { f.Repo = "repo-a"; return f }, []session.UsageRow{
			{Model: "m1", Turns: 2, Answers: 2, Usage: u(157, 40, 16)},
		}},
		{"no end", func(f session.UsageFilter) session.UsageFilter { f.Until = time.Time{}; f.Repo = "repo-a"; return f }, []session.UsageRow{
			{Model: "m1", Turns: 3, Answers: 3, Usage: u(10156, 40, 10015)},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := usageTotals(t, st, tc.f(period))
			if len(got) == 0 {
				got = nil
			}
			diff(t, "usage rows", tc.want, got)
		})
	}
	u2, _ := st.(session.UsageTotals)
	if _, err := u2.UsageTotals(t.Context(), session.UsageFilter{By: "thread"}); err == nil {
		t.Errorf("UsageTotals by thread: no error; want one naming the groups there are")
	}
}
