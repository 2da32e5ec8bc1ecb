package tracing_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/askrepo/askrepo/internal/tracing"
	"github.com/askrepo/askrepo/internal/tracing/tracingtest"
)

type modelFunc func(context.Context, llm.Request) (llm.Response, error)

func (f modelFunc) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	return f(ctx, req)
}

// BenchmarkTurn is what tracing adds to a turn: the agent loop with a
// model that answers at once (a tool step of two calls, then the answer)
// and the real tools over a small directory, untraced, traced to an
// in-process OTLP/HTTP receiver, and traced with content. A traced turn
// makes 5 spans; their export runs in the background, within the figure.
func BenchmarkTurn(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc A() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	calls := []llm.ToolCall{{ID: "1", Name: "read_file", Arguments: `{"path":"a.go"}`}, {ID: "2", Name: "glob", Arguments: `{"pattern":"*.go"}`}}
	model := modelFunc(func(_ context.Context, req llm.Request) (llm.Response, error) {
		usage := llm.Usage{PromptTokens: 1000, CachedPromptTokens: 800, CompletionTokens: 50}
		if req.Messages[len(req.Messages)-1].Role == llm.RoleUser {
			return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}, Usage: usage, FinishReason: "tool_calls"}, nil
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "answer"}, Usage: usage, FinishReason: "stop"}, nil
	})
	rec := tracingtest.New(b)
	for _, tc := range []struct {
		name string
		cfg  tracing.Config
	}{
		{"off", tracing.Config{}},
		{"on", tracing.Config{Endpoint: rec.Endpoint(), Model: "m"}},
		{"on_with_content", tracing.Config{Endpoint: rec.Endpoint(), Model: "m", Content: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tr, err := tracing.New(context.Background(), tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Shutdown(context.Background())
			a, err := agent.New(agent.Config{Model: tr.Model(model), Tools: tr.Tools(tools.NewRegistry(tools.Default(ws, tools.Options{})...))})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx, span := tr.StartTurn(context.Background(), tracing.Turn{Conversation: "T/C/1", Question: "q"})
				turn, err := a.Run(ctx, nil, llm.Message{Role: llm.RoleUser, Content: "q"}, nil)
				span.End(turn.Usage, err)
				if err != nil || turn.Steps != 2 {
					b.Fatalf("Run = %+v, %v", turn, err)
				}
			}
		})
	}
}
