package slackbot

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// TestSlackCallsPerTurnByUI counts the Web API calls one answered turn
// costs in each UI, from the fake Slack's records; run with -v to see them
// by method. The turn reads two files in one step and answers in three
// paragraphs.
func TestSlackCallsPerTurnByUI(t *testing.T) {
	answer := "First paragraph.\n\nSecond paragraph.\n\nThird paragraph."
	script := answering(answer)
	tests := []struct {
		name     string
		ui       string
		sessions bool
		posts    int // chat.postMessage calls
	}{
		{"messages", UIMessages, true, 2},
		{"stream", UIStream, true, 0},
		{"stream without agent sessions", UIStream, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{script: script, stream: true, cfg: func(c *Config) { c.UI = tt.ui }})
			if !tt.sessions {
				h.slack.FailAlways("agents.sessions.setStatus", slacktest.SlackError("missing_scope"))
			}
			before := len(h.slack.Snapshot().Calls)
			h.mention("C1", "what does this repo do?", "")
			h.waitTurns(1)
			calls := h.slack.Snapshot().Calls[before:]
			by, list := callsByMethod(calls)
			if by["chat.postMessage"] != tt.posts {
				t.Errorf("chat.postMessage %d, want %d", by["chat.postMessage"], tt.posts)
			}
			t.Logf("%s: %d Web API calls: %s", tt.name, len(calls), list)
		})
	}
}

// BenchmarkStreamFirstText measures the bot's own delay in the streamed
// UI: from the moment the fake model starts streaming the answer to the
// first appendStream carrying its text, as the fake Slack received it. The
// model sends a first paragraph and the start of a second at once, then
// holds the rest until that text is shown, as a model still writing does.
// The figure is the wait for the writer's next append (it coalesces to one
// per interval), the paragraph's citation check, and the calls:
//
//	go test ./internal/slackbot -run '^$' -bench StreamFirstText -benchtime 20x
func BenchmarkStreamFirstText(b *testing.B) {
	for _, interval := range []time.Duration{DefaultStreamInterval, 250 * time.Millisecond} {
		b.Run("interval="+interval.String(), func(b *testing.B) {
			var mu sync.Mutex
			started := map[string]time.Time{} // by question
			holds := map[string]*gate{}
			script := func(r llmtest.Request) llmtest.Reply {
				rep := readThenAnswer(r)
				if r.Last().Role == "tool" {
					mu.Lock()
					started[question(r)] = time.Now()
					hold := holds[question(r)]
					mu.Unlock()
					rep.Content = "The title is in `README.md:1`.\n\nMore words follow"
					rep.Wait, rep.WaitAfterText, rep.After = hold.c(), true, " here."
				}
				return rep
			}
			h := newHarness(b, harnessOpts{script: script, stream: true, cfg: func(c *Config) {
				c.UI, c.StreamInterval, c.AppendsPerMinute = UIStream, interval, 100_000
			}})
			roots := map[string]string{}
			b.ResetTimer()
			for i := range b.N {
				q := fmt.Sprintf("q%d", i)
				hold := newGate()
				mu.Lock()
				holds[q] = hold
				mu.Unlock()
				root := h.mention("C1", q, "")
				roots[q] = root
				if _, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
					ms := streams(st, root)
					return len(ms) == 1 && ms[0].MarkdownText != ""
				}); err != nil {
					b.Fatal(err)
				}
				hold.open()
				h.waitTurns(i + 1)
			}
			b.StopTimer()
			var lat []time.Duration
			st := h.slack.Snapshot()
			for q, root := range roots {
				ts := streams(st, root)[0].TS
				for _, c := range st.CallsTo("chat.appendStream") {
					if c.Params.Get("ts") == ts && strings.Contains(c.Params.Get("chunks"), `"markdown_text"`) {
						lat = append(lat, c.At.Sub(started[q]))
						break
					}
				}
			}
			if len(lat) != b.N {
				b.Fatalf("%d turns appended text, want %d", len(lat), b.N)
			}
			b.ReportMetric(float64(percentile(lat, 50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 99).Microseconds())/1000, "p99-ms")
		})
	}
}
