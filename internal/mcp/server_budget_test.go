package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/usage"
)

// spent is a quota whose repository budget is used up.
type spent struct{ over *usage.OverBudget }

func (s spent) Admit(context.Context, session.Key, string, string) error { return s.over }

// TestAskOverBudget: an ask over a budget gets the one sentence that says
// which budget and when it resets, as a refusal, and no model request;
// it is not logged as a failure with a reference to hand the operators.
func TestAskOverBudget(t *testing.T) {
	ai, model := scriptedModel(t)
	over := &usage.OverBudget{Limit: config.Limit{Per: config.PerRepo, Period: config.PeriodDay, Tokens: 1000},
		Repo: "alpha", ByTokens: true, Resets: time.Now().Add(time.Hour)}
	f := newFixture(t, fixtureOptions{model: model, quota: spent{over}})
	_, res := ask(t, f.connect(t, ciToken), map[string]any{"question": "where is Hello?", "repo": "alpha"})
	if !res.IsError || text(res) != over.Error() {
		t.Errorf("ask over budget: error %v, %q; want the budget's sentence %q", res.IsError, text(res), over.Error())
	}
	if n := ai.Count(); n != 0 {
		t.Errorf("the model got %d requests, want none", n)
	}
	if logs := f.logs.String(); strings.Contains(logs, "mcp ask failed") {
		t.Errorf("a refusal logged as a failure:\n%s", logs)
	}
	if n := f.counter(t, "askrepo_mcp_calls_total", map[string]string{"token": "ci", "tool": "ask", "outcome": "refused"}); n != 1 {
		t.Errorf("refused asks counted %v, want 1", n)
	}
}

// TestAskPerPersonBudgetIsTheTokens: a per-person budget counts an MCP
// token as the person: what people in Slack spent does not refuse a
// token's ask, and what the token spent is counted against it alone.
func TestAskPerPersonBudgetIsTheTokens(t *testing.T) {
	_, model := scriptedModel(t)
	limits := config.Budgets{Limits: []config.Limit{{Per: config.PerUser, Period: config.PeriodDay, Tokens: 100}}}
	var gate *usage.Gate
	f := newFixture(t, fixtureOptions{model: model, quota: quotaFunc(func(ctx context.Context, key session.Key, user, repo string) error {
		return gate.Admit(ctx, key, user, repo)
	})})
	gate = usage.NewGate(limits, f.store, nil)
	// A person in Slack spent their budget today.
	key := session.Key{Team: "T1", Channel: "C1", Thread: "1.0001"}
	if err := f.store.StartTurn(t.Context(), session.Turn{ID: "slack", Key: key, User: "U1", Model: "m"}, "alpha", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	if err := f.store.AppendStep(t.Context(), "slack", []llm.Message{{Role: llm.RoleAssistant, Content: "a"}}, llm.Usage{PromptTokens: 500}); err != nil {
		t.Fatal(err)
	}
	cs := f.connect(t, ciToken)
	if _, res := ask(t, cs, map[string]any{"question": "where is Hello?", "repo": "alpha"}); res.IsError {
		t.Fatalf("U1's spend refused the ci token's ask: %s", text(res))
	}
	rows, err := f.store.UsageTotals(t.Context(), session.UsageFilter{User: "mcp:ci"})
	if err != nil || len(rows) != 1 || rows[0].Turns != 1 {
		t.Errorf("usage of the ci token %+v (%v), want its one turn", rows, err)
	}
}

type quotaFunc func(ctx context.Context, key session.Key, user, repo string) error

func (f quotaFunc) Admit(ctx context.Context, key session.Key, user, repo string) error {
	return f(ctx, key, user, repo)
}
