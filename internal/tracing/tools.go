package tracing

import (
	"context"
	"slices"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/askrepo/askrepo/internal/tools"
)

// Toolbox is what the agent loop runs calls through.
type Toolbox interface {
	Definitions() []tools.Definition
	Run(ctx context.Context, call tools.Call) tools.Result
}

// Tools returns r with an execute_tool span around each call; off, r
// itself. The result is still a *tools.Registry underneath (it embeds it),
// so whatever asks the toolbox for more (Describe for context lines) gets
// the registry's answer.
func (t *Tracer) Tools(r *tools.Registry) Toolbox {
	if t == nil {
		return r
	}
	return &registry{Registry: r, t: t}
}

type registry struct {
	*tools.Registry
	t *Tracer
}

// Run is the registry's Run in an "execute_tool {tool}" span.
func (r *registry) Run(ctx context.Context, call tools.Call) tools.Result {
	t := r.t
	// The model names the tool: a name that is none of ours is its text,
	// not a span name, and goes on the span cut short.
	name, spanName := call.Name, "execute_tool "+call.Name
	if !slices.Contains(r.Names(), call.Name) {
		name, spanName = cut(call.Name, maxForeignName), "execute_tool"
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolNameKey.String(name),
		semconv.GenAIToolCallIDKey.String(call.ID),
		semconv.GenAIToolTypeKey.String("function"),
	}
	if id, ok := ctx.Value(turnKey{}).(string); ok {
		attrs = append(attrs, semconv.GenAIConversationIDKey.String(id))
	}
	if t.content {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(string(call.Input)))
	}
	ctx, span := t.tr.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	defer span.End()
	res := r.Registry.Run(ctx, call)
	if res.IsError {
		// The result tells the model what went wrong; the span only that
		// something did.
		span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		span.SetStatus(codes.Error, "tool_error")
	}
	if t.content {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(res.Content))
	}
	return res
}

// maxForeignName is how much of a tool name the model made up a span keeps.
const maxForeignName = 64

// cut is s cut to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
