package slackbot

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/tracing"
)

// traceTurn starts the turn's span: its model requests and tool calls,
// and the Slack calls that post its answer, are traced under it, and its
// trace id goes on each of the turn's log lines. The returned func ends
// it with the turn's outcome.
func (t *turnRun) traceTurn() (end func()) {
	ctx, span := t.b.cfg.Tracer.StartTurn(t.ctx, tracing.Turn{Conversation: t.in.Key.String(), Question: t.in.Text})
	if span == nil {
		return func() {}
	}
	t.ctx, t.post = ctx, span.Into(t.post)
	t.log = t.log.With("trace_id", span.TraceID())
	return func() { span.End(t.res.usage, t.res.err) }
}

// traceChat returns api with a span around each call made within a
// traced turn; with tracing off, api itself.
func traceChat(api chatAPI, tr *tracing.Tracer) chatAPI {
	if tr == nil {
		return api
	}
	return tracedChat{api: api, tr: tr}
}

type tracedChat struct {
	api chatAPI
	tr  *tracing.Tracer
}

func (c tracedChat) PostMessageContext(ctx context.Context, channel string, options ...slack.MsgOption) (string, string, error) {
	ctx, end := c.tr.Call(ctx, "chat.postMessage", tracing.Attr{Key: "slack.channel", Value: channel})
	ch, ts, err := c.api.PostMessageContext(ctx, channel, options...)
	end(err)
	return ch, ts, err
}

func (c tracedChat) UpdateMessageContext(ctx context.Context, channel, timestamp string, options ...slack.MsgOption) (string, string, string, error) {
	ctx, end := c.tr.Call(ctx, "chat.update", tracing.Attr{Key: "slack.channel", Value: channel})
	ch, ts, text, err := c.api.UpdateMessageContext(ctx, channel, timestamp, options...)
	end(err)
	return ch, ts, text, err
}
