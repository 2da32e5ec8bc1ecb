package slackbot

import (
	"context"
	"testing"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/askrepo/askrepo/internal/tracing"
	"github.com/askrepo/askrepo/internal/tracing/tracingtest"
	"github.com/askrepo/askrepo/internal/turn"
)

// A traced turn in Slack: one invoke_agent span for the thread, its model
// requests, tool calls and the Slack calls that post the answer as its
// children, and its trace id on the turn's log line.
func TestTurnIsTraced(t *testing.T) {
	rec := tracingtest.New(t)
	tr, err := tracing.New(t.Context(), tracing.Config{Endpoint: rec.Endpoint(), Model: "fake-model"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{
		cfg: func(c *Config) { c.Tracer = tr },
		runner: func(rc *turn.Config) {
			rc.Agent.Model = tr.Model(rc.Agent.Model)
			rc.Tools = func(ctx context.Context, l *repos.Lease, channel string) agent.Toolbox {
				return tr.Tools(testTools(ctx, l, channel).(*tools.Registry))
			}
		},
	})
	root := h.mention("C1", "what does this repo do?", "")
	h.waitReaction("C1", root, reactDone)
	summary := h.waitTurns(1)[0]
	count, turnSpan := tracedSpans(t, h, tr, rec)
	if count["invoke_agent"] != 1 || count["chat fake-model"] < 1 || count["execute_tool read_file"] != 1 || count["chat.postMessage"] < 1 {
		t.Fatalf("spans %v; want one invoke_agent with chat, execute_tool read_file and chat.postMessage spans", count)
	}
	if got := turnSpan.Attrs["gen_ai.conversation.id"]; got != "T1/C1/"+root {
		t.Errorf("conversation id %q, want the thread T1/C1/%s", got, root)
	}
	for _, s := range rec.Spans() {
		if s.Name != "invoke_agent" && (s.TraceID != turnSpan.TraceID || s.Parent != turnSpan.SpanID) {
			t.Errorf("span %q is not a child of the turn's span", s.Name)
		}
	}
	if summary["trace_id"] != turnSpan.TraceID {
		t.Errorf("turn log line trace_id %v, want %s", summary["trace_id"], turnSpan.TraceID)
	}
}

// Off, the turn's log line has no trace id and nothing is wrapped.
func TestTurnUntracedByDefault(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	root := h.mention("C1", "what does this repo do?", "")
	h.waitReaction("C1", root, reactDone)
	if _, ok := h.waitTurns(1)[0]["trace_id"]; ok {
		t.Error("an untraced turn's log line has a trace_id")
	}
	if _, ok := h.bot.poster.api.(tracedChat); ok {
		t.Error("the poster's Slack calls are wrapped with tracing off")
	}
}

// tracedSpans stops the bot, flushes the tracer and counts the spans rec
// received by name, with the turn's span.
func tracedSpans(t *testing.T, h *harness, tr *tracing.Tracer, rec *tracingtest.Receiver) (map[string]int, tracingtest.Span) {
	t.Helper()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var turnSpan tracingtest.Span
	for _, s := range rec.Spans() {
		count[s.Name]++
		if s.Name == "invoke_agent" {
			turnSpan = s
		}
	}
	return count, turnSpan
}
