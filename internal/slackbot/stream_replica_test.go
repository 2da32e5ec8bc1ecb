package slackbot

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// TestStreamTakenOverByTheOtherReplica: a replica that loses its lease
// mid-stream hands the turn over; the other resumes it into a new
// streamed message that says so, and the half-streamed message of the
// first is closed, not left spinning. One answer, shown once.
func TestStreamTakenOverByTheOtherReplica(t *testing.T) {
	p, stall := stalledPair(t, UIStream)
	root := p.mention(t, p.connA, "C1", "what is widget?")
	first := waitCards(t, p.a, root, 2)
	takeOver(t, p, stall, root)
	if got := outcomes(p.b.logLines("turn")); !slices.Equal(got, []string{outcomeAnswered}) {
		t.Errorf("replica b's turn outcomes %v, want [%s]", got, outcomeAnswered)
	}
	ms := streams(p.a.slack.Snapshot(), root)
	if len(ms) != 2 || ms[0].TS != first.TS {
		t.Fatalf("%d streamed messages, want a's and b's", len(ms))
	}
	if ms[0].Streaming || ms[1].Streaming {
		t.Errorf("a streamed message is left spinning: a's %v, b's %v", ms[0].Streaming, ms[1].Streaming)
	}
	text := streamedText(ms)
	if !strings.HasPrefix(ms[1].MarkdownText, noteResuming) || strings.Count(text, "**Answer** to: what is widget?") != 1 {
		t.Errorf("streamed %q then %q; want the answer once, in b's message after the note", ms[0].MarkdownText, ms[1].MarkdownText)
	}
	if n := len(answers(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))); n != 0 {
		t.Errorf("%d answers posted as messages besides the streams", n)
	}
}

// stalledPair is a pair of replicas in ui whose first turn never gets
// its second model reply, with replica a's lease renewals stallable.
func stalledPair(t *testing.T, ui string) (*replicaPair, *stallable) {
	t.Helper()
	var held atomic.Int32
	p := newReplicaPair(t, func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if r.Last().Role == "tool" && held.Add(1) == 1 {
			rep.Wait = make(chan struct{}) // replica a's step 2 never comes
		}
		return rep
	}, func(name string, c *Config) {
		c.UI = ui
		c.Shared = &stallable{Shared: c.Shared}
	})
	return p, p.a.bot.cfg.Shared.(*stallable)
}

// takeOver stalls replica a's lease renewals until b has answered root's
// turn, then waits for a to end its own.
func takeOver(t *testing.T, p *replicaPair, stall *stallable, root string) {
	t.Helper()
	stall.stalled.Store(true)
	p.b.waitReaction("C1", root, reactDone)
	stall.stalled.Store(false)
	ctx := p.a.ctx()
	for len(p.a.logLines("turn")) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("replica a never ended its turn after losing the lease")
		case <-time.After(2 * time.Millisecond):
		}
	}
}
