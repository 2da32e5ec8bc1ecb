package tracing

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/askrepo/askrepo/internal/llm"
)

// Model returns m with a chat span around each request; off, m itself.
func (t *Tracer) Model(m llm.Model) llm.Model {
	if t == nil {
		return m
	}
	return &model{t: t, m: m}
}

type model struct {
	t *Tracer
	m llm.Model
}

// Complete is m's Complete in a "chat {model}" span, a child of the turn's.
func (m *model) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	t := m.t
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(t.provider),
		semconv.GenAIRequestModelKey.String(t.model),
	}
	if id, ok := ctx.Value(turnKey{}).(string); ok {
		attrs = append(attrs, semconv.GenAIConversationIDKey.String(id))
	}
	if t.content {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messagesJSON(req.Messages, "")))
	}
	ctx, span := t.tr.Start(ctx, "chat "+t.model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	resp, err := m.m.Complete(ctx, req)
	if err != nil {
		fail(span, err)
		return resp, err
	}
	span.SetAttributes(usageAttrs(resp.Usage)...)
	if resp.FinishReason != "" {
		span.SetAttributes(semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{resp.FinishReason}))
	}
	if resp.Model != "" {
		span.SetAttributes(semconv.GenAIResponseModelKey.String(resp.Model))
	}
	if t.content {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(messagesJSON([]llm.Message{resp.Message}, resp.FinishReason)))
	}
	return resp, nil
}

// part and message are the conventions' JSON shape of chat messages
// (gen_ai.input.messages, gen_ai.output.messages).
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// messagesJSON is msgs in the conventions' shape; finish, when set, is the
// finish reason of an output message.
func messagesJSON(msgs []llm.Message, finish string) string {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		mm := message{Role: string(m.Role), Parts: []part{}, FinishReason: finish}
		switch {
		case m.Role == llm.RoleTool:
			mm.Parts = append(mm.Parts, part{Type: "tool_call_response", ID: m.ToolCallID, Response: m.Content})
		case m.Content != "":
			mm.Parts = append(mm.Parts, part{Type: "text", Content: m.Content})
		}
		for _, c := range m.ToolCalls {
			args := json.RawMessage(c.Arguments)
			if !json.Valid(args) {
				// What the model wrote, kept as text when it is not JSON.
				args, _ = json.Marshal(c.Arguments)
			}
			mm.Parts = append(mm.Parts, part{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args})
		}
		out = append(out, mm)
	}
	b, _ := json.Marshal(out)
	return string(b)
}
