package usage_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/usage"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

var (
	keyC1 = session.Key{Team: "T1", Channel: "C1", Thread: "1.1"}
	keyC2 = session.Key{Team: "T1", Channel: "C2", Thread: "2.1"}
)

// spend stores a finished turn that used u.
func spend(t *testing.T, st session.Store, id string, key session.Key, user, repo string, u llm.Usage) {
	t.Helper()
	ctx := t.Context()
	if err := st.StartTurn(ctx, session.Turn{ID: id, Key: key, User: user, Model: "m"}, repo, llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendStep(ctx, id, []llm.Message{{Role: llm.RoleAssistant, Content: "a"}}, u); err != nil {
		t.Fatal(err)
	}
	if err := st.EndTurn(ctx, id, session.TurnDone, ""); err != nil {
		t.Fatal(err)
	}
}

// TestGateRefuses: each kind of budget refuses the question that comes
// after it is used up, with the sentence that names it and its reset, and
// only for the channel, user or repository that used it.
func TestGateRefuses(t *testing.T) {
	now := time.Date(2026, 12, 3, 15, 30, 0, 0, time.UTC)
	prices := map[string]config.Price{"m": {Input: 1_000_000, Output: 1_000_000}} // 1 per token: easy sums
	spent := llm.Usage{PromptTokens: 60, CompletionTokens: 40}                    // 100 tokens, cost 100
	cases := []struct {
		limit config.Limit
		want  string
		// other is a question the same spend does not touch.
		otherKey        session.Key
		otherUser, repo string
	}{
		{config.Limit{Per: "channel", Period: "day", Tokens: 100},
			"This channel has used today's budget of 100 tokens for each channel, so I am not asking the model; it resets at 00:00 UTC on Friday 4 December.",
			keyC2, "U1", "pay"},
		{config.Limit{Per: "channel", Period: "month", Cost: 99.5},
			"This channel has used this month's budget of an estimated cost of 99.50 for each channel, so I am not asking the model; it resets at 00:00 UTC on Friday 1 January.",
			keyC2, "U1", "pay"},
		{config.Limit{Per: "user", Period: "day", Cost: 100},
			"You have used today's budget of an estimated cost of 100.00 for each person, so I am not asking the model; it resets at 00:00 UTC on Friday 4 December.",
			keyC1, "U2", "pay"},
		{config.Limit{Per: "user", Period: "month", Tokens: 50},
			"You have used this month's budget of 50 tokens for each person, so I am not asking the model; it resets at 00:00 UTC on Friday 1 January.",
			keyC1, "U2", "pay"},
		{config.Limit{Per: "repo", Period: "day", Tokens: 100, Cost: 1000},
			"Questions about pay have used today's budget of 100 tokens for each repository, so I am not asking the model; it resets at 00:00 UTC on Friday 4 December.",
			keyC1, "U1", "docs"},
		{config.Limit{Per: "repo", Period: "month", Tokens: 1_000_000, Cost: 100},
			"Questions about pay have used this month's budget of an estimated cost of 100.00 for each repository, so I am not asking the model; it resets at 00:00 UTC on Friday 1 January.",
			keyC1, "U1", "docs"},
	}
	for _, tc := range cases {
		t.Run(tc.limit.Per+"/"+tc.limit.Period, func(t *testing.T) {
			clk := &clock{t: now}
			st := session.NewMemoryWith(session.MemoryOptions{Now: clk.Now})
			g := usage.NewGate(config.Budgets{Limits: []config.Limit{tc.limit}, Prices: prices}, st, clk.Now)
			if err := g.Admit(t.Context(), keyC1, "U1", "pay"); err != nil {
				t.Fatalf("Admit before any spend: %v", err)
			}
			spend(t, st, "t1", keyC1, "U1", "pay", spent)
			err := g.Admit(t.Context(), keyC1, "U1", "pay")
			var over *usage.OverBudget
			if !errors.As(err, &over) {
				t.Fatalf("Admit after the budget is used = %v; want *OverBudget", err)
			}
			if err.Error() != tc.want {
				t.Errorf("sentence:\n got %q\nwant %q", err.Error(), tc.want)
			}
			if err := g.Admit(t.Context(), tc.otherKey, tc.otherUser, tc.repo); err != nil {
				t.Errorf("Admit for another %s: %v; want nil, the budget is each one's own", tc.limit.Per, err)
			}
		})
	}
}

// TestGateResetsAtBoundary: the spend of a period counts until the last
// instant of its UTC day or month, and not from the first of the next.
func TestGateResetsAtBoundary(t *testing.T) {
	cases := []struct {
		period      string
		spent, next time.Time
	}{
		{"day", time.Date(2026, 12, 3, 23, 59, 0, 0, time.UTC), time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)},
		{"month", time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		// A local midnight is not the reset: periods are UTC.
		{"day", time.Date(2026, 12, 3, 22, 0, 0, 0, time.FixedZone("UTC-5", -5*3600)), time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		t.Run(tc.period+" "+tc.spent.String(), func(t *testing.T) {
			clk := &clock{t: tc.spent}
			st := session.NewMemoryWith(session.MemoryOptions{Now: clk.Now})
			g := usage.NewGate(config.Budgets{Limits: []config.Limit{{Per: "user", Period: tc.period, Tokens: 10}}}, st, clk.Now)
			spend(t, st, "t1", keyC1, "U1", "pay", llm.Usage{PromptTokens: 10})
			clk.Set(tc.next.Add(-time.Nanosecond))
			err := g.Admit(t.Context(), keyC1, "U1", "pay")
			var over *usage.OverBudget
			if !errors.As(err, &over) || !over.Resets.Equal(tc.next) {
				t.Fatalf("Admit just before %v = %v; want over budget, resetting then", tc.next, err)
			}
			clk.Set(tc.next)
			if err := g.Admit(t.Context(), keyC1, "U1", "pay"); err != nil {
				t.Errorf("Admit at %v: %v; want the budget reset", tc.next, err)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	rows := []session.UsageRow{
		{Group: "U1", Model: "a", Turns: 2, Answers: 1, Usage: llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 400_000, CompletionTokens: 100_000}},
		{Group: "U1", Model: "b", Turns: 1, Answers: 1, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 1}},
		{Group: "U2", Model: "a", Turns: 1, Answers: 1, Usage: llm.Usage{PromptTokens: 2_000_000, CompletionTokens: 0}},
	}
	prices := usage.Prices{"a": {Input: 2, Cached: 0.5, Output: 8}}
	since := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	got := usage.Summarize(rows, since, session.UsageByUser, prices)
	want := usage.Report{Since: since, By: session.UsageByUser, Lines: []usage.Line{
		{Group: "U1", Answers: 2, Turns: 3, UncachedTokens: 600_010, CachedTokens: 400_000, CompletionTokens: 100_001,
			EstimatedCost: 1.2 + 0.2 + 0.8, Unpriced: []string{"b"}},
		{Group: "U2", Answers: 1, Turns: 1, UncachedTokens: 2_000_000, EstimatedCost: 4},
	}, Total: usage.Line{Answers: 3, Turns: 4, UncachedTokens: 2_600_010, CachedTokens: 400_000, CompletionTokens: 100_001,
		EstimatedCost: 6.2, Unpriced: []string{"b"}}}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
}
