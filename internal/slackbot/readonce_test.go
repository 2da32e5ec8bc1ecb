package slackbot

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// readCounter is a store that counts the reads of a whole session, history
// and all: on SQLite and PostgreSQL each one reads every message.
type readCounter struct {
	session.Store
	reads atomic.Int64
}

func (s *readCounter) Session(ctx context.Context, key session.Key) (session.Session, bool, error) {
	s.reads.Add(1)
	return s.Store.Session(ctx, key)
}

// A question reads its thread's session once, a follow-up too: whether the
// thread is the bot's is asked without the history, and the thread's
// totals for the footer are counted from the session the turn read, not
// read again.
func TestTurnReadsItsSessionOnce(t *testing.T) {
	counter := &readCounter{}
	h := newHarness(t, harnessOpts{cfg: func(c *Config) {
		counter.Store = c.Store
		c.Store = counter
	}})
	root := h.mention("C1", "what does this repo do?", "")
	h.waitTurns(1)
	if n := counter.reads.Load(); n != 1 {
		t.Errorf("the first question read its session %d times, want once", n)
	}
	h.slack.SendEvent(slacktest.UserMessage("C1", "channel", "U1", "and where are its tests?", h.slack.NextTS(), root))
	h.waitTurns(2)
	if n := counter.reads.Load() - 1; n != 1 {
		t.Errorf("the follow-up read its session %d times, want once", n)
	}
	// The footer still shows the thread's totals, this turn's included.
	answers := answers(h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))
	if len(answers) != 2 {
		t.Fatalf("%d answers, want 2", len(answers))
	}
	sess, _, err := h.store.SessionInfo(t.Context(), session.Key{Team: "T1", Channel: "C1", Thread: root})
	if err != nil {
		t.Fatal(err)
	}
	// The footer writes counts of a thousand and more as "4.4k".
	k := func(n int) string {
		if n < 1000 {
			return strconv.Itoa(n)
		}
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64), ".0") + "k"
	}
	u := sess.Usage
	want := "thread: " + k(u.PromptTokens) + " in"
	if u.CachedPromptTokens > 0 {
		want += " (" + k(u.CachedPromptTokens) + " cached)"
	}
	want += ", " + k(u.CompletionTokens) + " out"
	if footer := answers[1].AllText(); !strings.Contains(footer, want) {
		t.Errorf("the follow-up's footer lacks the thread's totals %q: %s", want, footer)
	}
}
