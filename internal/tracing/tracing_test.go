package tracing_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/askrepo/askrepo/internal/tracing"
	"github.com/askrepo/askrepo/internal/tracing/tracingtest"
)

const (
	secretQuestion = "where is QUESTION-TEXT-7f3"
	secretFile     = "FILE-TEXT-91c lives here"
	secretAnswer   = "ANSWER-TEXT-e2d"
	thread         = "T1/C1/1700000000.000100"
)

// tracedTurn runs one turn through the real agent loop, a real client
// against a scripted OpenAI-compatible server and the real tools over a
// directory, with tracing to rec, then one Slack-like call inside the turn
// and one outside it. It returns the turn's trace id.
func tracedTurn(t *testing.T, rec *tracingtest.Receiver, content bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(secretFile+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fake := llmtest.New(t, llmtest.Queue(
		llmtest.Reply{Calls: []llmtest.Call{
			{ID: "call_read", Name: "read_file", Args: `{"path":"README.md"}`},
			// A tool name the model made up is its text, not a span name.
			{ID: "call_evil", Name: "no_such_tool " + strings.Repeat("x", 200), Args: `{}`},
		}},
		llmtest.Reply{Content: secretAnswer, Usage: &llmtest.Usage{Prompt: 900, Cached: 600, Output: 40}},
	))
	client, err := llm.NewClient(llm.ClientConfig{BaseURL: fake.Root() + "/v1", APIKey: "sk-test", Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := tracing.New(t.Context(), tracing.Config{Endpoint: rec.Endpoint(), Content: content, Provider: "openai", Model: "gpt-test"})
	if err != nil || tr == nil {
		t.Fatalf("New: %v, %v", tr, err)
	}
	a, err := agent.New(agent.Config{Model: tr.Model(client), Tools: tr.Tools(tools.NewRegistry(tools.Default(ws, tools.Options{})...))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tr.StartTurn(t.Context(), tracing.Turn{Conversation: thread, Repo: "demo", Question: secretQuestion})
	turn, err := a.Run(ctx, nil, llm.Message{Role: llm.RoleUser, Content: secretQuestion}, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// The answer is posted under another context, as Slack posts are.
	_, end := tr.Call(span.Into(context.Background()), "chat.postMessage")
	end(nil)
	_, end = tr.Call(context.Background(), "chat.update") // outside any turn
	end(nil)
	span.End(turn.Usage, nil)
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	return span.TraceID()
}

func byName(t *testing.T, spans []tracingtest.Span, name string) tracingtest.Span {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	t.Fatalf("no span %q among %q", name, names)
	return tracingtest.Span{}
}

func wantAttrs(t *testing.T, s tracingtest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Attrs[k]; !ok || got != v {
			t.Errorf("span %q: %s = %q (set %v), want %q", s.Name, k, got, ok, v)
		}
	}
}

func TestTurnSpans(t *testing.T) {
	rec := tracingtest.New(t)
	traceID := tracedTurn(t, rec, false)
	spans := rec.Spans()
	if len(spans) != 6 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("got %d spans %q, want 6: invoke_agent, 2 chat, 2 execute_tool, chat.postMessage (none for the call outside the turn)", len(spans), names)
	}
	root := byName(t, spans, "invoke_agent")
	if root.Parent != "" || root.TraceID != traceID || len(traceID) != 32 {
		t.Errorf("invoke_agent: parent %q trace %q, want a root span of trace %q", root.Parent, root.TraceID, traceID)
	}
	wantAttrs(t, root, map[string]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-test", "gen_ai.conversation.id": thread, "askrepo.repository": "demo",
		"gen_ai.usage.input_tokens": "1100", "gen_ai.usage.output_tokens": "60",
	})
	var chats int
	for _, s := range spans {
		if s.SpanID != root.SpanID && (s.TraceID != root.TraceID || s.Parent != root.SpanID) {
			t.Errorf("span %q: trace %s parent %s, want a child of invoke_agent %s/%s", s.Name, s.TraceID, s.Parent, root.TraceID, root.SpanID)
		}
		if s.Name != "chat gpt-test" {
			continue
		}
		chats++
		if s.Kind != "client" {
			t.Errorf("chat span kind %q, want client", s.Kind)
		}
		wantAttrs(t, s, map[string]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test",
			"gen_ai.response.model": "gpt-test", "gen_ai.conversation.id": thread,
		})
		if s.Attrs["gen_ai.response.finish_reasons"] == "stop" {
			wantAttrs(t, s, map[string]string{"gen_ai.usage.input_tokens": "900", "gen_ai.usage.cache_read.input_tokens": "600", "gen_ai.usage.output_tokens": "40"})
		} else if s.Attrs["gen_ai.response.finish_reasons"] != "tool_calls" {
			t.Errorf("chat span finish reasons %q, want stop or tool_calls", s.Attrs["gen_ai.response.finish_reasons"])
		}
	}
	if chats != 2 {
		t.Errorf("%d chat spans, want 2", chats)
	}
	wantAttrs(t, byName(t, spans, "execute_tool read_file"), map[string]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "call_read",
		"gen_ai.conversation.id": thread,
	})
	foreign := byName(t, spans, "execute_tool")
	if n := foreign.Attrs["gen_ai.tool.name"]; len(n) > 64 || !strings.HasPrefix(n, "no_such_tool") || foreign.Status != "error" {
		t.Errorf("a made-up tool's span: name %q (%d bytes), status %q; want it cut to 64 bytes, and an error", n, len(n), foreign.Status)
	}
	if post := byName(t, spans, "chat.postMessage"); post.Kind != "client" {
		t.Errorf("Slack call span kind %q, want client", post.Kind)
	}
	if got := root.Resource["service.name"]; got != "askrepo" {
		t.Errorf("service.name %q, want askrepo", got)
	}
}

// Spans hold no question, answer, tool argument or file content unless
// content is asked for.
func TestContentOnlyWhenAsked(t *testing.T) {
	for _, content := range []bool{false, true} {
		rec := tracingtest.New(t)
		tracedTurn(t, rec, content)
		found := map[string]bool{}
		for _, s := range rec.Spans() {
			for k, v := range s.Attrs {
				for _, secret := range []string{"QUESTION-TEXT-7f3", "FILE-TEXT-91c", "ANSWER-TEXT-e2d", "README.md"} {
					if strings.Contains(v, secret) {
						found[secret] = true
						if !content {
							t.Errorf("content off: span %q attribute %s holds %q", s.Name, k, secret)
						}
					}
				}
			}
		}
		if content && len(found) != 4 {
			t.Errorf("content on: spans hold %v, want the question, the answer, the file's text and the tool's arguments", found)
		}
	}
}

// Off, nothing is wrapped and nothing is started: the model and the tools
// are the very values given.
func TestOffIsNothing(t *testing.T) {
	tr, err := tracing.New(t.Context(), tracing.Config{})
	if err != nil || tr != nil {
		t.Fatalf("New without an endpoint = %v, %v; want nil, nil", tr, err)
	}
	demo := llm.NewDemo()
	if got := tr.Model(demo); got != llm.Model(demo) {
		t.Errorf("Model wrapped the model while off")
	}
	reg := tools.NewRegistry()
	if got := tr.Tools(reg); got != tracing.Toolbox(reg) {
		t.Errorf("Tools wrapped the registry while off")
	}
	ctx, span := tr.StartTurn(t.Context(), tracing.Turn{Conversation: thread})
	if ctx != t.Context() || span != nil || span.TraceID() != "" {
		t.Errorf("StartTurn while off changed the context or made a span")
	}
	span.End(llm.Usage{}, nil)
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown while off: %v", err)
	}
}

func TestTracesURL(t *testing.T) {
	for _, tc := range []struct {
		cfg  tracing.Config
		want string
	}{
		{tracing.Config{}, ""},
		{tracing.Config{Endpoint: "http://collector:4318"}, "http://collector:4318/v1/traces"},
		{tracing.Config{Endpoint: "http://collector:4318/"}, "http://collector:4318/v1/traces"},
		{tracing.Config{Endpoint: "http://a:4318", TracesEndpoint: "https://b/otlp/traces"}, "https://b/otlp/traces"},
	} {
		if got := tc.cfg.TracesURL(); got != tc.want {
			t.Errorf("%+v: TracesURL() = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}
