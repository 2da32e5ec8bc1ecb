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

// Toolbox is what the agent loop runs calls through, with the short form
// of a call the context lines show.
type Toolbox interface {
	Definitions() []tools.Definition
	Run(ctx context.Context, call tools.Call) tools.Result
	Describe(call tools.Call) string
}

// Tools returns tb with an execute_tool span around each call; off, tb
// itself. The wrapper answers what the loop and the context lines ask a
// toolbox for (Describe, ReadOnly) as tb does.
func (t *Tracer) Tools(tb Toolbox) Toolbox {
	if t == nil {
		return tb
	}
	r := &registry{Toolbox: tb, t: t}
	for _, d := range tb.Definitions() {
		r.names = append(r.names, d.Name)
	}
	return r
}

type registry struct {
	Toolbox
	t     *Tracer
	names []string // the tools tb offers
}

// ReadOnly is tb's, for a toolbox that says which calls may run together;
// every call of one that does not.
func (r *registry) ReadOnly(name string) bool {
	if ro, ok := r.Toolbox.(interface{ ReadOnly(string) bool }); ok {
		return ro.ReadOnly(name)
	}
	return true
}

// Run is the toolbox's Run in an "execute_tool {tool}" span.
func (r *registry) Run(ctx context.Context, call tools.Call) tools.Result {
	t := r.t
	// The model names the tool: a name that is none of ours is its text,
	// not a span name, and goes on the span cut short.
	name, spanName := call.Name, "execute_tool "+call.Name
	if !slices.Contains(r.names, call.Name) {
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
	res := r.Toolbox.Run(ctx, call)
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
