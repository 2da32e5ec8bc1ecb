package llm

import (
	"bytes"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
)

const testKey = "sk-test-0123456789abcdef"

// newTestClient builds a client for f with fast retries; edit adjusts cfg.
func newTestClient(t testing.TB, f *llmtest.Server, edit func(*ClientConfig)) (*Client, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	cfg := ClientConfig{
		BaseURL:   f.URL,
		APIKey:    testKey,
		Model:     "test-model",
		RetryBase: time.Millisecond,
		RetryMax:  5 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(&lockedWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
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

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// openaiDelta is one streamed tool-call delta as go-openai decodes it.
func openaiDelta(index *int, id, name, args string) openai.ToolCall {
	return openai.ToolCall{Index: index, ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}
