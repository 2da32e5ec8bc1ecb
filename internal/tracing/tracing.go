// Package tracing exports OpenTelemetry traces of the turns: one
// invoke_agent span per turn, a chat span per model request, an
// execute_tool span per tool call, and a span per Slack call that posts the
// answer, with the GenAI semantic conventions' attributes. It is the only
// package that imports OpenTelemetry.
//
// Tracing is off unless an OTLP endpoint is configured. Off, New returns a
// nil *Tracer, and every method of a nil *Tracer or *Span does nothing and
// wraps nothing: the model and the tools are called directly, so a service
// that does not trace pays nothing for it.
//
// Spans carry no prompt, answer, tool argument or file content unless
// Config.Content says so: a trace backend is usually read by more people
// than the repository is.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/askrepo/askrepo/internal/llm"
)

// Config says where traces go and what they may hold.
type Config struct {
	// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT, the collector's base URL
	// (traces go to its /v1/traces); TracesEndpoint is
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the full URL, and wins. Both
	// empty: tracing is off. Headers, timeout and sampling come from the
	// SDK's own OTEL_* variables in the process environment.
	Endpoint, TracesEndpoint string
	// Content puts prompts, answers, tool arguments and tool results on
	// the spans (BOT_TRACE_CONTENT).
	Content bool
	// Service and Version name the service in the trace's resource;
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override them.
	Service, Version string
	// Provider is gen_ai.provider.name ("openai", "deepseek", …) and
	// Model the model asked for, on every GenAI span.
	Provider, Model string
	// Logger hears export failures. nil discards them.
	Logger *slog.Logger
}

// Tracer starts the spans of turns. A nil *Tracer is off. It is safe for
// concurrent use.
type Tracer struct {
	tp       *sdktrace.TracerProvider
	tr       trace.Tracer
	content  bool
	provider string
	model    string
}

// TracesURL is where cfg sends traces: the traces endpoint as given, or
// /v1/traces under the base endpoint; "" when tracing is off.
func (cfg Config) TracesURL() string {
	if cfg.TracesEndpoint != "" {
		return cfg.TracesEndpoint
	}
	if cfg.Endpoint != "" {
		return strings.TrimRight(cfg.Endpoint, "/") + "/v1/traces"
	}
	return ""
}

// New builds the tracer that exports to cfg's endpoint over OTLP/HTTP
// (protobuf), batching spans in the background. It returns nil, and no
// error, when no endpoint is configured. Shutdown flushes it.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	url := cfg.TracesURL()
	if url == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(url))
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter for %s: %w", url, err)
	}
	service := []attribute.KeyValue{semconv.ServiceName(cmpOr(cfg.Service, "askrepo"))}
	if cfg.Version != "" {
		service = append(service, semconv.ServiceVersion(cfg.Version))
	}
	res, err := resource.New(ctx, resource.WithAttributes(service...), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	if cfg.Logger != nil {
		log := cfg.Logger.With("component", "tracing")
		// The SDK reports failed exports to one process-wide handler.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("export traces", "endpoint", url, "err", err)
		}))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracer{
		tp:       tp,
		tr:       tp.Tracer("github.com/askrepo/askrepo"),
		content:  cfg.Content,
		provider: cmpOr(cfg.Provider, "openai"),
		model:    cfg.Model,
	}, nil
}

// Shutdown sends the spans not yet exported and stops the exporter; ctx
// bounds how long that may take.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Turn describes a turn for its span.
type Turn struct {
	// Conversation is the thread: gen_ai.conversation.id on the turn's
	// spans.
	Conversation string
	Repo         string
	// Question is recorded only with Config.Content.
	Question string
}

// turnKey carries the turn's conversation id to its child spans.
type turnKey struct{}

// StartTurn starts the turn's invoke_agent span; the returned context
// carries it, so the model requests, tool calls and Slack posts made with
// it are its children. End the span with Span.End.
func (t *Tracer) StartTurn(ctx context.Context, turn Turn) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIProviderNameKey.String(t.provider),
		semconv.GenAIRequestModelKey.String(t.model),
		semconv.GenAIConversationIDKey.String(turn.Conversation),
	}
	if turn.Repo != "" {
		attrs = append(attrs, attribute.String("askrepo.repository", turn.Repo))
	}
	if t.content && turn.Question != "" {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messagesJSON([]llm.Message{{Role: llm.RoleUser, Content: turn.Question}}, "")))
	}
	ctx = context.WithValue(ctx, turnKey{}, turn.Conversation)
	ctx, span := t.tr.Start(ctx, "invoke_agent", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, &Span{span: span, conversation: turn.Conversation}
}

// Span is a turn's span. A nil *Span is a turn that is not traced.
type Span struct {
	span         trace.Span
	conversation string
}

// TraceID is the turn's trace id in hex, for its log line; "" when off.
func (s *Span) TraceID() string {
	if s == nil {
		return ""
	}
	return s.span.SpanContext().TraceID().String()
}

// Into returns ctx carrying the turn's span, so that work done under
// another context (the Slack posts that outlive a cancelled turn) is
// traced as the turn's too.
func (s *Span) Into(ctx context.Context) context.Context {
	if s == nil {
		return ctx
	}
	return trace.ContextWithSpan(context.WithValue(ctx, turnKey{}, s.conversation), s.span)
}

// Carry returns to carrying the turn's span that from carries, if any: for
// work a turn hands to a context of its own (a writer that outlives a
// cancelled turn), so that work is still traced as the turn's.
func Carry(from, to context.Context) context.Context {
	span := trace.SpanFromContext(from)
	if !span.SpanContext().IsValid() {
		return to
	}
	if id, ok := from.Value(turnKey{}).(string); ok {
		to = context.WithValue(to, turnKey{}, id)
	}
	return trace.ContextWithSpan(to, span)
}

// End ends the turn's span with its token totals and its error, if any.
func (s *Span) End(usage llm.Usage, err error) {
	if s == nil {
		return
	}
	s.span.SetAttributes(usageAttrs(usage)...)
	fail(s.span, err)
	s.span.End()
}

// Call starts a span for one call to an outside API (a Slack method) made
// within a traced turn, and returns the function that ends it. Outside a
// turn, or off, it starts nothing: background calls make no traces of
// their own.
func (t *Tracer) Call(ctx context.Context, name string, attrs ...Attr) (context.Context, func(error)) {
	if t == nil || !trace.SpanFromContext(ctx).SpanContext().IsValid() {
		return ctx, func(error) {}
	}
	kvs := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		kvs[i] = attribute.String(a.Key, a.Value)
	}
	ctx, span := t.tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kvs...))
	return ctx, func(err error) {
		fail(span, err)
		span.End()
	}
}

// Attr is a span attribute of Call, so that callers need not import
// OpenTelemetry.
type Attr struct{ Key, Value string }

// usageAttrs are a usage's GenAI attributes: input tokens count the cached
// ones too, as the conventions and the OpenAI API both count them.
func usageAttrs(u llm.Usage) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIUsageInputTokensKey.Int(u.PromptTokens),
		semconv.GenAIUsageOutputTokensKey.Int(u.CompletionTokens),
		semconv.GenAIUsageCacheReadInputTokensKey.Int(u.CachedPromptTokens),
	}
}

// fail marks a span as failed with the kind of err (cancelled, timeout,
// error): an error's message may quote what the span must not hold, and
// the turn's log line, which the trace id leads to, has it in full.
func fail(span trace.Span, err error) {
	if err == nil {
		return
	}
	kind := "error"
	switch {
	case errors.Is(err, context.Canceled):
		kind = "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(kind))
	span.SetStatus(codes.Error, kind)
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
