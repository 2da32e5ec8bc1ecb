package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Usage is the token usage a reply reports.
type Usage struct{ Prompt, Cached, Output int }

// Call is one tool call of a reply. An empty ID becomes call_<request>_<i>.
type Call struct{ ID, Name, Args string }

// Reply is one scripted answer: an assistant message (text, tool calls),
// an HTTP error or raw events, with the faults a test may ask for.
type Reply struct {
	Content string
	Calls   []Call
	// Finish overrides the finish reason: "stop", or "tool_calls" when
	// there are calls.
	Finish string
	// Usage defaults to 100 prompt tokens per message and 20 output.
	Usage *Usage

	// Status other than 0 and 200 answers with Body (by default an
	// OpenAI error naming the status) and Headers ("Key: value").
	Status      int
	Body        string
	ContentType string // default application/json
	Headers     []string

	// Chunks, when set, are sent as the stream's events verbatim, then
	// [DONE] unless Cut; Body with status 200 is sent verbatim too.
	Chunks []string

	// Wait holds the reply until it is closed or the client goes away.
	Wait <-chan struct{}
	// WaitAfterText, when streaming, sends the text before waiting on
	// Wait, so a client shows it while the answer is unfinished.
	WaitAfterText bool
	// After, with WaitAfterText, is more text sent once Wait opens: an
	// answer that pauses halfway.
	After string
	// Hang never answers: the request ends when the client goes away.
	Hang bool
	// Cut ends a stream after its text and calls, without a finish
	// reason or [DONE], as a crashing server does.
	Cut bool
}

// JSON answers status with a JSON body and headers given as "Key: value".
func JSON(status int, body string, headers ...string) Reply {
	return Reply{Status: status, Body: body, Headers: headers}
}

// Error answers status with an OpenAI error object saying message.
func Error(status int, message string, headers ...string) Reply {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "server_error"}})
	return JSON(status, string(b), headers...)
}

// RateLimited answers 429 asking the client to wait retryAfter seconds.
func RateLimited(retryAfter string) Reply {
	return Error(http.StatusTooManyRequests, "Rate limit reached for requests", "Retry-After: "+retryAfter)
}

// HTML answers status with an HTML page, as a proxy or login wall does.
func HTML(status int, page string) Reply {
	return Reply{Status: status, Body: page, ContentType: "text/html; charset=utf-8"}
}

// SSE streams chunks verbatim as events, then [DONE].
func SSE(chunks ...string) Reply { return Reply{Chunks: chunks} }

// CutSSE streams chunks and closes the connection without [DONE].
func CutSSE(chunks ...string) Reply { return Reply{Chunks: chunks, Cut: true} }

// Chunk is one chat.completion.chunk with a JSON delta and a finish reason
// ("" for null).
func Chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}`
}

// UsageChunk is the last chunk of a stream asked for include_usage.
func UsageChunk(usage string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":` + usage + `}`
}

// Completion is a whole chat.completion with a JSON message and usage.
func Completion(message, finish, usage string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":` + message + `,"finish_reason":"` + finish + `"}],"usage":` + usage + `}`
}

func (rep Reply) write(w http.ResponseWriter, r *http.Request, req Request, piece int) {
	if rep.Hang {
		<-r.Context().Done()
		return
	}
	failure := (rep.Status != 0 && rep.Status != http.StatusOK) || rep.Body != ""
	stream := req.Chat.Stream && !failure
	if rep.Wait != nil && !(stream && rep.WaitAfterText) && !wait(r, rep.Wait) {
		return
	}
	for _, h := range rep.Headers {
		k, v, _ := strings.Cut(h, ": ")
		w.Header().Set(k, v)
	}
	if rep.Chunks != nil {
		rep.sendChunks(w)
		return
	}
	if failure {
		body := rep.Body
		if body == "" {
			body = fmt.Sprintf(`{"error":{"message":"scripted failure %d","type":"server_error"}}`, rep.Status)
		}
		ct := rep.ContentType
		if ct == "" {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(max(rep.Status, http.StatusOK))
		io.WriteString(w, body)
		return
	}
	m := rep.message(req)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		msg := map[string]any{"role": "assistant", "content": rep.Content + rep.After}
		if len(m.calls) > 0 {
			msg["tool_calls"] = m.calls
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": m.id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Chat.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": m.finish}},
			"usage":   m.usage,
		})
		return
	}
	rep.stream(w, r, req, m, piece)
}

func wait(r *http.Request, c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	case <-r.Context().Done():
		return false
	}
}

type message struct {
	id     string
	calls  []map[string]any
	finish string
	usage  map[string]any
}

func (rep Reply) message(req Request) message {
	m := message{id: fmt.Sprintf("chatcmpl-%d", req.N), finish: rep.Finish}
	for i, c := range rep.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", req.N, i)
		}
		m.calls = append(m.calls, map[string]any{
			"id": id, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args},
		})
	}
	if m.finish == "" {
		m.finish = "stop"
		if len(m.calls) > 0 {
			m.finish = "tool_calls"
		}
	}
	u := Usage{Prompt: 100 * len(req.Chat.Messages), Output: 20}
	if rep.Usage != nil {
		u = *rep.Usage
	}
	m.usage = map[string]any{
		"prompt_tokens": u.Prompt, "completion_tokens": u.Output, "total_tokens": u.Prompt + u.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": u.Cached},
	}
	return m
}

func (rep Reply) sendChunks(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for _, c := range rep.Chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
		if fl != nil && !rep.Cut {
			fl.Flush()
		}
	}
	if !rep.Cut {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// stream sends the reply as chunks: the role, the text in
// pieces, each tool call as a chunk naming it and a chunk with its
// arguments (by index), the finish reason, then the usage with no choices
// (what stream_options.include_usage produces), then [DONE].
func (rep Reply) stream(w http.ResponseWriter, r *http.Request, req Request, m message, piece int) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(choices []any, extra map[string]any) {
		c := map[string]any{"id": m.id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Chat.Model, "choices": choices}
		for k, v := range extra {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	delta := func(d map[string]any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}), nil)
	for _, p := range pieces(rep.Content, piece) {
		send(delta(map[string]any{"content": p}), nil)
	}
	for i, c := range m.calls {
		fn := c["function"].(map[string]any)
		send(delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c["id"], "type": "function", "function": map[string]any{"name": fn["name"], "arguments": ""},
		}}}), nil)
		send(delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "function": map[string]any{"arguments": fn["arguments"]},
		}}}), nil)
	}
	if rep.Cut {
		return
	}
	if rep.Wait != nil && rep.WaitAfterText && !wait(r, rep.Wait) {
		return
	}
	for _, p := range pieces(rep.After, piece) {
		send(delta(map[string]any{"content": p}), nil)
	}
	send([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": m.finish}}, nil)
	send([]any{}, map[string]any{"usage": m.usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// pieces splits s into n-rune pieces, or in two halves when n is 0.
func pieces(s string, n int) []string {
	if s == "" {
		return nil
	}
	if n <= 0 {
		half := len(s) / 2
		return []string{s[:half], s[half:]}
	}
	var out []string
	for runes := []rune(s); len(runes) > 0; {
		k := min(len(runes), n)
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}
