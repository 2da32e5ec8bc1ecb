package slackbot

import (
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// TestStreamFallbackIsForAWhile: in auto, a refusal that says the
// workspace will not stream (a missing scope, a conversation of a kind
// that cannot) turns streaming off there for a while, and only a while;
// any other failure costs only that turn its stream. Each question gets
// one answer either way.
func TestStreamFallbackIsForAWhile(t *testing.T) {
	tests := []struct {
		name     string
		code     string
		fallback time.Duration
		starts   int  // chat.startStream calls for two questions
		streamed bool // whether the second answer streams
	}{
		{"missing scope", "missing_scope", 0, 1, false},
		{"conversation kind", "invalid_channel_type", 0, 1, false},
		{"refusal whose while is over", "feature_not_enabled", time.Nanosecond, 2, true},
		{"not a refusal", "internal_error", 0, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{stream: true, cfg: func(c *Config) {
				c.UI = UIAuto
				c.StreamFallback = tt.fallback
			}})
			h.slack.FailNext("chat.startStream", slacktest.SlackError(tt.code))
			var roots []string
			for i, q := range []string{"first", "second"} {
				roots = append(roots, h.mention("C1", q, ""))
				h.waitTurns(i + 1)
			}
			st := h.slack.Snapshot()
			if n := len(st.CallsTo("chat.startStream")); n != tt.starts {
				t.Errorf("%d chat.startStream calls, want %d", n, tt.starts)
			}
			if a := answers(st.BotMessages("C1", roots[0], slacktest.DefaultBotID)); len(a) != 1 {
				t.Errorf("first question: %d answers as messages, want 1", len(a))
			}
			msgs := st.BotMessages("C1", roots[1], slacktest.DefaultBotID)
			s, a := len(streams(st, roots[1])), len(answers(msgs))
			if tt.streamed && (s != 1 || a != 0) || !tt.streamed && (s != 0 || a != 1) {
				t.Errorf("second question: %d streamed, %d answers as messages; want streamed %v: %q", s, a, tt.streamed, allTexts(msgs))
			}
		})
	}
}

// TestStreamFallbackIsPerWorkspace: a workspace that refused streaming
// answers as messages for a while; another workspace of the same app
// still streams.
func TestStreamFallbackIsPerWorkspace(t *testing.T) {
	h := newHarness(t, harnessOpts{stream: true, cfg: func(c *Config) { c.UI = UIAuto }})
	h.slack.FailNext("chat.startStream", slacktest.SlackError("feature_not_enabled"))
	mention := func(team, q string) string {
		ts := h.slack.NextTS()
		ev := slacktest.AppMention("C1", "U1", "<@"+slacktest.DefaultBotUserID+"> "+q, ts, "")
		ev.Team = team
		h.slack.SendEvent(ev)
		return ts
	}
	t1 := mention("T1", "first")
	h.waitTurns(1)
	t2 := mention("T2", "second")
	h.waitTurns(2)
	again := mention("T1", "third")
	h.waitTurns(3)

	st := h.slack.Snapshot()
	if n := len(st.CallsTo("chat.startStream")); n != 2 {
		t.Errorf("%d chat.startStream calls, want 2: T1's refused one and T2's", n)
	}
	for _, tc := range []struct {
		root     string
		streamed bool
	}{{t1, false}, {t2, true}, {again, false}} {
		s, a := len(streams(st, tc.root)), len(answers(st.BotMessages("C1", tc.root, slacktest.DefaultBotID)))
		if tc.streamed && (s != 1 || a != 0) || !tc.streamed && (s != 0 || a != 1) {
			t.Errorf("thread %s: %d streamed, %d answers as messages; want streamed %v", tc.root, s, a, tc.streamed)
		}
	}
}
