package slackbot

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
	"github.com/askrepo/askrepo/internal/turn"
	"github.com/askrepo/askrepo/internal/usage"
)

// budgetPrices make every token cost 1: sums are easy to check.
var budgetPrices = usage.Prices{"fake-model": {Input: 1e6, Cached: 1e6, Output: 1e6}}

// withBudgets is a harness whose runner checks limits against store.
func withBudgets(store *session.Memory, limits ...config.Limit) harnessOpts {
	gate := usage.NewGate(config.Budgets{Limits: limits, Prices: budgetPrices}, store, nil)
	return harnessOpts{
		store:  store,
		runner: func(c *turn.Config) { c.Quota = gate },
		cfg:    func(c *Config) { c.Prices = budgetPrices },
	}
}

// seedSpend stores a finished turn of user U1 in channel C1 about the test
// repository that spent 100 tokens (cost 100).
func seedSpend(t *testing.T, st session.Store) {
	t.Helper()
	ctx := t.Context()
	key := session.Key{Team: slacktest.DefaultTeamID, Channel: "C1", Thread: "1.000001"}
	if err := st.StartTurn(ctx, session.Turn{ID: "seed", Key: key, User: "U1", Model: "fake-model"}, testRepoName, llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendStep(ctx, "seed", []llm.Message{{Role: llm.RoleAssistant, Content: "a"}}, llm.Usage{PromptTokens: 70, CompletionTokens: 30}); err != nil {
		t.Fatal(err)
	}
	if err := st.EndTurn(ctx, "seed", session.TurnDone, ""); err != nil {
		t.Fatal(err)
	}
}

// waitBotText waits for a message of the bot in the thread root of channel
// whose text has want, and returns it.
func (h *harness) waitBotText(channel, root, want string) string {
	h.t.Helper()
	var got string
	_, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		for _, m := range st.BotMessages(channel, root, slacktest.DefaultBotID) {
			if strings.Contains(m.Text, want) {
				got = m.Text
				return true
			}
		}
		return false
	})
	if err != nil {
		h.t.Fatalf("no message with %q in %s/%s: %v\n%s", want, channel, root, err, h.logs.String())
	}
	return got
}

// TestBudgetRefusesBeforeTheModel: a question over any kind of budget
// gets the one sentence naming it and its reset, and no request reaches
// the model.
func TestBudgetRefusesBeforeTheModel(t *testing.T) {
	cases := []struct {
		limit config.Limit
		want  string
	}{
		{config.Limit{Per: "channel", Period: "day", Tokens: 100}, "This channel has used today's budget of 100 tokens for each channel"},
		{config.Limit{Per: "channel", Period: "month", Cost: 50}, "This channel has used this month's budget of an estimated cost of 50.00 for each channel"},
		{config.Limit{Per: "user", Period: "day", Cost: 100}, "You have used today's budget of an estimated cost of 100.00 for each person"},
		{config.Limit{Per: "user", Period: "month", Tokens: 99}, "You have used this month's budget of 99 tokens for each person"},
		{config.Limit{Per: "repo", Period: "day", Cost: 1}, "Questions about " + testRepoName + " have used today's budget of an estimated cost of 1.00 for each repository"},
		{config.Limit{Per: "repo", Period: "month", Tokens: 100}, "Questions about " + testRepoName + " have used this month's budget of 100 tokens for each repository"},
	}
	for _, tc := range cases {
		t.Run(tc.limit.Per+"/"+tc.limit.Period, func(t *testing.T) {
			store := session.NewMemory()
			seedSpend(t, store)
			h := newHarness(t, withBudgets(store, tc.limit))
			root := h.mention("C1", "how does it work?", "")
			got := h.waitBotText("C1", root, tc.want)
			_, resets := usage.Period(tc.limit.Period, time.Now())
			if want := tc.want + ", so I am not asking the model; it resets at " + resets.Format("15:04 UTC on Monday 2 January") + "."; got != want {
				t.Errorf("refusal:\n got %q\nwant %q", got, want)
			}
			lines := h.waitTurns(1)
			if lines[0]["outcome"] != outcomeOverBudget || lines[0]["user"] != "U1" {
				t.Errorf("turn line %v; want outcome %s for U1", lines[0], outcomeOverBudget)
			}
			if n := h.ai.Count(); n != 0 {
				t.Errorf("model got %d requests; want none for a question over budget", n)
			}
			// Refused before the turn shows any work, as the other
			// one-sentence refusals are.
			if adds := h.slack.Snapshot().CallsTo("reactions.add"); len(adds) != 0 {
				t.Errorf("reactions added: %v; want none for a refused question", adds)
			}
			if u, _ := store.UsageTotals(t.Context(), session.UsageFilter{}); len(u) != 1 || u[0].Turns != 1 {
				t.Errorf("store totals %+v; want the seeded turn alone (a refusal stores no turn)", u)
			}
		})
	}
}

// TestBudgetCrossedMidTurnFinishes: a turn that starts under its budget
// and spends past it in its first step still answers; the next question
// is refused, and the model hears nothing of it.
func TestBudgetCrossedMidTurnFinishes(t *testing.T) {
	store := session.NewMemory()
	h := newHarness(t, withBudgets(store, config.Limit{Per: "user", Period: "day", Tokens: 500}))
	root := h.mention("C1", "first?", "")
	h.waitReaction("C1", root, reactDone)
	if n := h.ai.Count(); n != 2 {
		t.Fatalf("model got %d requests for the first question; want 2, the second after the budget was crossed", n)
	}
	root2 := h.mention("C2", "second?", "")
	h.waitBotText("C2", root2, "You have used today's budget of 500 tokens")
	lines := h.waitTurns(2)
	if n := h.ai.Count(); n != 2 {
		t.Errorf("model got %d requests; want still 2", n)
	}
	// The first turn's line may come after the refusal's: its ✅ is added
	// before it logs the line.
	answered := lines[0]
	for _, l := range lines {
		if l["thread"] == "T1/C1/"+root {
			answered = l
		}
	}
	for k, want := range map[string]any{"outcome": "answered", "user": "U1", "model": "fake-model", "tools": "read_file,list_files", "retries": float64(0)} {
		if answered[k] != want {
			t.Errorf("answered turn's %s = %v; want %v", k, answered[k], want)
		}
	}
	if _, ok := answered["latency"]; !ok {
		t.Errorf("answered turn's line has no latency: %v", answered)
	}
	m := h.metrics()
	for _, want := range []string{
		`askrepo_usage_tokens_total{kind="uncached_prompt",model="fake-model",repo="` + testRepoName + `"} 1400`,
		`askrepo_usage_tokens_total{kind="cached_prompt",model="fake-model",repo="` + testRepoName + `"} 800`,
		`askrepo_usage_tokens_total{kind="completion",model="fake-model",repo="` + testRepoName + `"} 70`,
		`askrepo_usage_estimated_cost_total{model="fake-model",repo="` + testRepoName + `"} 2270`,
		`askrepo_usage_answers_total{model="fake-model",repo="` + testRepoName + `"} 1`,
		`askrepo_turns_total{outcome="over_budget"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestBudgetSharedByReplicas: two bots on one store count each other's
// spend: what one replica answered uses up the budget on the other.
func TestBudgetSharedByReplicas(t *testing.T) {
	srv := slacktest.New()
	t.Cleanup(srv.Close)
	ai := llmtest.New(t, readThenAnswer)
	store := session.NewMemory()
	limit := config.Limit{Per: "channel", Period: "month", Tokens: 1000}
	start := func(name string) *harness {
		o := withBudgets(store, limit)
		o.slack, o.ai = srv, ai
		o.cfg = func(c *Config) { c.Shared, c.Replica, c.LeaseTTL = store, name, testLeaseTTL }
		return newHarness(t, o)
	}
	a := start("replica-a")
	connA := srv.LiveConns()[0]
	b := start("replica-b")
	var connB int
	for _, id := range srv.LiveConns() {
		if id != connA {
			connB = id
		}
	}
	root, err := srv.MentionTo(connA, "C1", "U1", "first?", "")
	if err != nil {
		t.Fatal(err)
	}
	a.waitReaction("C1", root, reactDone)
	root2, err := srv.MentionTo(connB, "C1", "U2", "second?", "")
	if err != nil {
		t.Fatal(err)
	}
	b.waitBotText("C1", root2, "This channel has used this month's budget of 1,000 tokens")
	if n := ai.Count(); n != 2 {
		t.Errorf("model got %d requests; want 2, all for the first question", n)
	}
	if got := fmt.Sprint(b.waitTurns(1)[0]["outcome"]); got != outcomeOverBudget {
		t.Errorf("replica b's turn outcome %s; want %s", got, outcomeOverBudget)
	}
}

// TestTurnLineCountsRetries: a model request sent again after a 503 is
// counted in the turn's line, with the one request that came through.
func TestTurnLineCountsRetries(t *testing.T) {
	var first sync.Once
	h := newHarness(t, harnessOpts{script: func(r llmtest.Request) llmtest.Reply {
		failed := false
		first.Do(func() { failed = true })
		if failed {
			return llmtest.Reply{Status: 503}
		}
		return readThenAnswer(r)
	}})
	root := h.mention("C1", "flaky?", "")
	h.waitReaction("C1", root, reactDone)
	line := h.waitTurns(1)[0]
	if line["retries"] != float64(1) || line["outcome"] != "answered" {
		t.Errorf("turn line %v; want answered with retries 1", line)
	}
}

// The model names the tools it calls: a name that is not a tool's shape
// (a newline, JSON, something long) is written as "other", so the turn
// line holds nothing the model wrote but tool names.
func TestToolCounts(t *testing.T) {
	cases := []struct {
		called []string
		want   string
	}{
		{nil, ""},
		{[]string{"read_file", "list_files", "read_file", "read_file"}, "read_file×3,list_files"},
		{[]string{"read_file\n{\"msg\":\"turn\"}", "Read File", strings.Repeat("a", 65), "", "git_log"}, "other×4,git_log"},
	}
	for _, tc := range cases {
		if got := toolCounts(tc.called); got != tc.want {
			t.Errorf("toolCounts(%q) = %q; want %q", tc.called, got, tc.want)
		}
	}
}
