package mcp

import (
	"log/slog"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/config"
)

// A tool whose input schema is not an object's is left out: the model
// API refuses a request whose function parameters are not an object
// schema, and every request of every turn carries every offered tool, so
// one such tool would fail every answer where its server is offered.
func TestClientToolWithABadSchemaIsLeftOut(t *testing.T) {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	listed := []*sdk.Tool{
		{Name: "good", Annotations: ro, InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}},
		{Name: "none", Annotations: ro},
		{Name: "string", Annotations: ro, InputSchema: map[string]any{"type": "string"}},
		{Name: "untyped", Annotations: ro, InputSchema: map[string]any{"properties": map[string]any{}}},
		{Name: "array", Annotations: ro, InputSchema: []any{"type", "object"}},
		{Name: "props", Annotations: ro, InputSchema: map[string]any{"type": "object", "properties": []any{"q"}}},
		{Name: "required", Annotations: ro, InputSchema: map[string]any{"type": "object", "required": "q"}},
	}
	opts := ClientOptions{Env: func(string) (string, bool) { return "", false }, Logger: slog.New(slog.DiscardHandler), Now: time.Now}
	srv := newUpstream(config.MCPServer{Name: "odd", URL: "http://127.0.0.1:1/mcp", Channels: []string{"*"}}, &opts)
	var got []string
	for _, rt := range pickTools(srv, listed, opts.Logger) {
		got = append(got, rt.remote)
	}
	if len(got) != 2 || got[0] != "good" || got[1] != "none" {
		t.Errorf("offered %v, want [good none]", got)
	}
}
