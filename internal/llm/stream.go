package llm

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// streamOnce sends one streaming request and assembles the whole answer.
// The answer is returned only when the stream ends, so a stream broken
// halfway can be retried from scratch; a listener set with WithText hears
// the text as it arrives, with the attempt it belongs to.
func (c *Client) streamOnce(ctx context.Context, creq openai.ChatCompletionRequest, x *exchange) (resp Response, err error) {
	stream, err := c.api.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		// On failure go-openai returns a reader with no response; there is
		// nothing to close (the transport already closed the error body).
		return Response{}, err
	}
	defer stream.Close()
	chunks := 0
	defer func() {
		// go-openai skips lines that are not "data:" events, so a 200 that
		// is not an event stream at all (an HTML page from a wrong base
		// URL) looks like a stream that ended early, and would be retried
		// as one. Without a single event and with another content type it
		// is the wrong endpoint, which retrying cannot fix.
		if err != nil && chunks == 0 && x.status == http.StatusOK && !isEventStream(x.header) {
			err = fmt.Errorf("%w: Content-Type %q is not an event stream (text/event-stream); if the server cannot stream, set OPENAI_STREAM=false",
				errMalformed, x.header.Get("Content-Type"))
		}
	}()

	resp = Response{Message: Message{Role: RoleAssistant}}
	var (
		content, reasoning strings.Builder
		acc                toolCallAccumulator
		// usageOnly is set by a chunk that carries usage and no choices:
		// the closing chunk of stream_options.include_usage.
		usageOnly bool
	)
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Response{}, err
		}
		chunks++
		var chunk openai.ChatCompletionStreamResponse
		if err := json.Unmarshal(raw, &chunk); err != nil {
			return Response{}, fmt.Errorf("%w: a stream chunk is not JSON: %v", errMalformed, err)
		}
		resp.Model = cmp.Or(chunk.Model, resp.Model)
		if chunk.Usage != nil {
			// Servers with continuous usage stats send it on every chunk;
			// it is cumulative, so the last one wins.
			resp.Usage = usageFrom(chunk.Usage, raw)
			usageOnly = len(chunk.Choices) == 0
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			content.WriteString(ch.Delta.Content)
			if x.onText != nil && ch.Delta.Content != "" {
				x.onText(x.attempt, ch.Delta.Content)
			}
			reasoning.WriteString(ch.Delta.ReasoningContent)
			for _, tc := range ch.Delta.ToolCalls {
				acc.add(tc)
			}
			if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
				resp.FinishReason = string(ch.FinishReason)
			}
		}
	}
	// go-openai reports a connection closed without "data: [DONE]" as a
	// plain io.EOF, the same as a finished stream. A stream that never said
	// why it stopped (no finish_reason) and did not end with the usage-only
	// chunk was cut off. Usage alone does not prove the end: vLLM's
	// continuous usage stats put it on every chunk.
	if resp.FinishReason == "" && !usageOnly {
		return Response{}, errBrokenStream
	}
	resp.Message.Content = content.String()
	resp.Message.Reasoning = reasoning.String()
	resp.Message.ToolCalls = acc.finish()
	return resp, c.checkTruncated(resp)
}

// isEventStream reports whether h declares a server-sent event stream.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// toolCallAccumulator assembles tool calls from stream deltas. Servers
// disagree on how deltas identify their call:
//   - OpenAI: the first delta of a call has index, id and name; later ones
//     only the index and an arguments fragment; parallel calls use 0, 1, …
//   - Ollama (some versions): every call arrives whole with index 0 and its
//     own id, so indexing alone would glue {"a":1}{"b":2} together.
//   - some proxies and Gemini's compatibility layer: no index at all.
//
// The rule: with an index, use that index's call unless it already has a
// different id (then a new call starts and takes over the index); without
// one, a new id starts a call and a delta without id continues the last one.
// The zero value is ready to use.
type toolCallAccumulator struct {
	calls []ToolCall
	byIdx map[int]int // stream index → position in calls
}

func (a *toolCallAccumulator) add(d openai.ToolCall) {
	pos := -1
	switch {
	case d.Index != nil:
		if p, ok := a.byIdx[*d.Index]; ok && (d.ID == "" || a.calls[p].ID == "" || a.calls[p].ID == d.ID) {
			pos = p
		}
		if pos < 0 {
			pos = a.start()
			if a.byIdx == nil {
				a.byIdx = make(map[int]int)
			}
			a.byIdx[*d.Index] = pos
		}
	case len(a.calls) > 0 && (d.ID == "" || d.ID == a.calls[len(a.calls)-1].ID):
		pos = len(a.calls) - 1
	default:
		pos = a.start()
	}
	c := &a.calls[pos]
	if d.ID != "" {
		c.ID = d.ID
	}
	if d.Function.Name != "" {
		c.Name = d.Function.Name
	}
	c.Arguments += d.Function.Arguments
}

func (a *toolCallAccumulator) start() int {
	a.calls = append(a.calls, ToolCall{})
	return len(a.calls) - 1
}

// finish returns the calls with empty arguments as "{}" (parameterless
// tools from vLLM and others) and missing ids synthesized, because the next
// request must pair every tool result with its call's id.
func (a *toolCallAccumulator) finish() []ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	out := make([]ToolCall, len(a.calls))
	for i, c := range a.calls {
		if len(bytes.TrimSpace([]byte(c.Arguments))) == 0 {
			c.Arguments = "{}"
		}
		if c.ID == "" {
			c.ID = "call_" + strings.ToLower(rand.Text()[:16])
		}
		out[i] = c
	}
	return out
}

// TextFunc hears the text of a streamed reply as it arrives. attempt counts
// the tries of one request from 1: text heard under an earlier attempt
// belongs to a stream that broke, and the new attempt starts over.
type TextFunc func(attempt int, text string)

type textKey struct{}

// WithText returns a context under which a streaming Client calls f with
// each piece of a reply's text (not its reasoning or tool calls) as it
// arrives, from the goroutine that called Complete, before Complete
// returns. Passing it through the context lets a terminal show an answer
// as it is written without the agent loop in between knowing of it.
// Without streaming (ClientConfig.Stream false, the demo model) nothing is
// heard and the text comes whole in the Response.
func WithText(ctx context.Context, f TextFunc) context.Context {
	return context.WithValue(ctx, textKey{}, f)
}

func textFunc(ctx context.Context) TextFunc {
	f, _ := ctx.Value(textKey{}).(TextFunc)
	return f
}
