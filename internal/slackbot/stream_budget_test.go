package slackbot

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
	"github.com/askrepo/askrepo/internal/turn"
	"github.com/askrepo/askrepo/internal/usage"
)

// spentBetween admits a question's first check and refuses every later
// one: another replica used the budget up while the turn was starting.
type spentBetween struct {
	n    atomic.Int32
	over *usage.OverBudget
}

func (s *spentBetween) Admit(context.Context, session.Key, string, string) error {
	if s.n.Add(1) == 1 {
		return nil
	}
	return s.over
}

// TestStreamRefusedByABudgetAfterItStarted: a streamed turn that the
// runner refuses for a budget once the stream is open shows the budget's
// sentence once, leaves no streamed message spinning nor the session
// processing, and asks no model.
func TestStreamRefusedByABudgetAfterItStarted(t *testing.T) {
	over := &usage.OverBudget{Limit: config.Limit{Per: config.PerUser, Period: config.PeriodDay, Tokens: 10}, ByTokens: true, Resets: time.Now().Add(time.Hour)}
	quota := &spentBetween{over: over}
	o := streamed(readThenAnswer, nil)
	o.runner = func(c *turn.Config) { c.Quota = quota }
	h := newHarness(t, o)
	root := h.mention("C1", "how does it work?", "")
	if lines := h.waitTurns(1); lines[0]["outcome"] != outcomeOverBudget {
		t.Fatalf("outcome %v, want %s", lines[0]["outcome"], outcomeOverBudget)
	}
	st := h.slack.Snapshot()
	if n := h.ai.Count(); n != 0 {
		t.Errorf("model got %d requests, want none", n)
	}
	if n := len(st.Sessions); n > 0 && st.Sessions[n-1].Status == "processing" {
		t.Error("the thread's agent session is left processing")
	}
	var shown int
	for _, m := range st.BotMessages("C1", root, slacktest.DefaultBotID) {
		if m.Streaming {
			t.Errorf("streamed message %s left spinning", m.TS)
		}
		shown += strings.Count(m.AllText()+m.MarkdownText, over.Error())
	}
	if shown != 1 {
		t.Errorf("the budget's sentence is shown %d times, want once:\n%q", shown, allTexts(st.BotMessages("C1", root, slacktest.DefaultBotID)))
	}
}
