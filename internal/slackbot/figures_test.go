package slackbot

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// BenchmarkAckLatency measures, from the fake Slack's records, how fast
// envelopes are acked while the bot is busy answering: half of them are
// mentions that start turns (four run at a time), half channel chatter the
// bot acks and ignores. It reports the p50, p99 and max latency:
//
//	go test ./internal/slackbot -run '^$' -bench AckLatency -benchtime 200x -count 3
func BenchmarkAckLatency(b *testing.B) {
	for _, mode := range []string{"paced", "burst"} {
		b.Run(mode, func(b *testing.B) {
			h := newHarness(b, harnessOpts{
				cfg: func(c *Config) { c.MaxConcurrent = 4 },
				// An answer without tools keeps the model out of the figure.
				script: func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "ok: " + question(r)} },
			})
			b.ResetTimer()
			turns := 0
			for i := range b.N {
				var env string
				if i%2 == 0 {
					turns++
					env = h.slack.SendEvent(slacktest.AppMention(fmt.Sprintf("C%d", i%7), "U1", fmt.Sprintf("<@UBOT> q%d", i), "", ""))
				} else {
					env = h.slack.SendEvent(slacktest.UserMessage("C1", "channel", "U1", "chatter", "", ""))
				}
				if mode == "paced" {
					if _, err := h.slack.WaitAck(h.ctx(), env); err != nil {
						b.Fatal(err)
					}
				}
			}
			h.waitTurns(turns)
			b.StopTimer()
			lat := h.slack.AckLatencies()
			if len(lat) < b.N {
				b.Fatalf("%d acks recorded, want %d", len(lat), b.N)
			}
			b.ReportMetric(float64(percentile(lat, 50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(slices.Max(lat).Microseconds())/1000, "max-ms")
		})
	}
}

// TestSlackCallsPerTurn counts the Web API calls one turn costs, from the
// fake Slack's records; run with -v to see them by method.
func TestSlackCallsPerTurn(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	before := len(h.slack.Snapshot().Calls) // auth.test and apps.connections.open
	h.mention("C1", "what does this repo do?", "")
	h.waitTurns(1)
	calls := h.slack.Snapshot().Calls[before:]
	by, list := callsByMethod(calls)
	if by["chat.postMessage"] != 2 {
		t.Errorf("chat.postMessage %d, want 2 (progress, answer)", by["chat.postMessage"])
	}
	t.Logf("one turn with 2 tool calls in 1 step: %d Web API calls: %s", len(calls), list)
}

// callsByMethod counts calls by method, and lists the counts.
func callsByMethod(calls []slacktest.Call) (map[string]int, string) {
	by := map[string]int{}
	for _, c := range calls {
		by[c.Method]++
	}
	var parts []string
	for m, k := range by {
		parts = append(parts, fmt.Sprintf("%s %d", m, k))
	}
	sort.Strings(parts)
	return by, strings.Join(parts, ", ")
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
