package llm

import (
	"log/slog"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
)

const testKey = "sk-test-0123456789abcdef"

// newTestClient builds a client for f with fast retries; edit adjusts cfg.
func newTestClient(t testing.TB, f *llmtest.Server, edit func(*ClientConfig)) (*Client, *logtest.Buffer) {
	t.Helper()
	var logs logtest.Buffer
	cfg := ClientConfig{
		BaseURL:   f.URL,
		APIKey:    testKey,
		Model:     "test-model",
		RetryBase: time.Millisecond,
		RetryMax:  5 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c, &logs
}

// openaiDelta is one streamed tool-call delta as go-openai decodes it.
func openaiDelta(index *int, id, name, args string) openai.ToolCall {
	return openai.ToolCall{Index: index, ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}
