package slackbot

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// TestSlackServiceFigures measures, from the fake Slack's records, how fast
// envelopes are acked while the bot is busy answering, and how many Web API
// calls one turn costs. It asserts only Slack's own limit (an ack within
// 3s); run with -v to see the figures:
//
//	go test ./internal/slackbot -run TestSlackServiceFigures -count=1 -v
func TestSlackServiceFigures(t *testing.T) {
	for _, mode := range []string{"paced", "burst"} {
		t.Run("ack latency "+mode, func(t *testing.T) {
			const n = 200
			h := newHarness(t, harnessOpts{
				cfg: func(c *Config) { c.MaxConcurrent = 4 },
				// An answer without tools keeps the model out of the figure.
				script: func(r chatRequest) fakeReply { return fakeReply{Content: "ok: " + r.question()} },
			})
			for i := range n {
				// Half new questions (each starts a turn, so turns run
				// while later envelopes arrive), half chatter the bot must
				// ack and ignore.
				var env string
				if i%2 == 0 {
					env = h.slack.SendEvent(slacktest.AppMention(fmt.Sprintf("C%d", i%7), "U1", fmt.Sprintf("<@UBOT> q%d", i), "", ""))
				} else {
					env = h.slack.SendEvent(slacktest.UserMessage("C1", "channel", "U1", "chatter", "", ""))
				}
				if mode == "paced" {
					if _, err := h.slack.WaitAck(h.ctx(), env); err != nil {
						t.Fatal(err)
					}
				}
			}
			h.waitTurns(n / 2)
			lat := h.slack.AckLatencies()
			if len(lat) < n {
				t.Fatalf("%d acks recorded, want %d", len(lat), n)
			}
			p50, p99, max := percentile(lat, 50), percentile(lat, 99), slices.Max(lat)
			if max > 3*time.Second {
				t.Errorf("slowest ack %v: Slack redelivers after 3s", max)
			}
			t.Logf("ack latency, %s, %d envelopes (%d of them start turns, 4 run at a time): p50 %v, p99 %v, max %v",
				mode, len(lat), n/2, p50.Round(time.Microsecond), p99.Round(time.Microsecond), max.Round(time.Microsecond))
		})
	}

	t.Run("web API calls per turn", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		before := len(h.slack.Snapshot().Calls) // auth.test and apps.connections.open
		h.mention("C1", "what does this repo do?", "")
		h.waitTurns(1)
		calls := h.slack.Snapshot().Calls[before:]
		by := map[string]int{}
		for _, c := range calls {
			by[c.Method]++
		}
		var parts []string
		for m, k := range by {
			parts = append(parts, fmt.Sprintf("%s %d", m, k))
		}
		sort.Strings(parts)
		if by["chat.postMessage"] != 2 {
			t.Errorf("chat.postMessage %d, want 2 (progress, answer)", by["chat.postMessage"])
		}
		t.Logf("one turn with 2 tool calls in 1 step: %d Web API calls: %s", len(calls), strings.Join(parts, ", "))
	})
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}
