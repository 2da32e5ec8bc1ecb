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
