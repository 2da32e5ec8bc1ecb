package agent

import (
	"context"
	"testing"

	"github.com/askrepo/askrepo/internal/llm"
)

// BenchmarkLoopStep measures what the loop itself costs around the model
// and the tools: one turn of a tool step (two calls, run concurrently) and
// the answer step, with a model and tools that do nothing.
func BenchmarkLoopStep(b *testing.B) {
	calls := []llm.ToolCall{tc("1", "read_file", `{"path":"a.go"}`), tc("2", "list_files", `{"path":"."}`)}
	model := modelFunc(func(_ context.Context, req llm.Request) (llm.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == llm.RoleUser {
			return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}}, nil
		}
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "answer"}}, nil
	})
	a := newAgent(b, Config{Model: model, Tools: newBox(fixed("read_file", "1\tpackage a\n"), fixed("list_files", "a.go\n"))})
	history := make([]llm.Message, 0, 40)
	for range 10 {
		history = append(history, userMsg("earlier question"), llm.Message{Role: llm.RoleAssistant, Content: "earlier answer"})
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		turn, err := a.Run(ctx, history, userMsg("q"), nil)
		if err != nil || turn.Steps != 2 {
			b.Fatalf("Run = %+v, %v", turn, err)
		}
	}
}
