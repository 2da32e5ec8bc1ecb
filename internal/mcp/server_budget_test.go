package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/config"
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
