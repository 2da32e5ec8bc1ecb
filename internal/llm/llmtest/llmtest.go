// Package llmtest is a scripted OpenAI-compatible chat completions server
// for tests: plain JSON and server-sent events, replies chosen per request
// by a script, every request recorded, and the faults real servers and
// proxies produce (429 with Retry-After, 500, a hang, a cut stream, an HTML
// page, a 404 for a wrong path).
//
// It is a test kit: only _test.go files import it, never product code (the
// import-rules test keeps it so), and it imports nothing of askrepo, so any
// package's tests can use it.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Path is the one path the server answers; anything else gets a 404, as a
// base URL without /v1 does against a real server.
const Path = "/v1/chat/completions"

// Script chooses the reply to a request. It runs on the server's goroutine,
// outside the server's lock, so it may block or look at the server.
type Script func(Request) Reply

// Queue answers the n-th request with the n-th reply; the last one repeats.
func Queue(replies ...Reply) Script {
	return func(r Request) Reply {
		return replies[min(r.N, len(replies))-1]
	}
}

// Server is the fake. Its zero value is not usable: call New.
type Server struct {
	// URL is the base URL a client takes, /v1 included.
	URL string

	srv     *httptest.Server
	key     string
	piece   int
	arrived chan int

	mu       sync.Mutex
	script   Script
	reqs     []Request
	answered int
}

// Option adjusts a Server made by New.
type Option func(*Server)

// WithKey makes the server answer 401 to a request whose Authorization is
// not "Bearer key".
func WithKey(key string) Option { return func(s *Server) { s.key = key } }

// WithPiece streams text n runes per chunk; by default it comes in two
// halves, enough to show a client joins deltas.
func WithPiece(n int) Option { return func(s *Server) { s.piece = n } }

// New starts a server answering by script (nil answers "ok") and closes it
// when the test ends.
func New(t testing.TB, script Script, opts ...Option) *Server {
	t.Helper()
	if script == nil {
		script = func(Request) Reply { return Reply{Content: "ok"} }
	}
	s := &Server{script: script, arrived: make(chan int, 1024)}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.srv.Close)
	return s
}

// Root is the server's address without /v1, to build wrong base URLs.
func (s *Server) Root() string { return s.srv.URL }

// Host is the server's host:port.
func (s *Server) Host() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// SetScript replaces the script for the requests that follow.
func (s *Server) SetScript(script Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = script
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Count is how many requests arrived.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// Request returns the n-th request (from 0) or fails the test.
func (s *Server) Request(t testing.TB, n int) Request {
	t.Helper()
	reqs := s.Requests()
	if n >= len(reqs) {
		t.Fatalf("request %d was not made; %d requests", n, len(reqs))
	}
	return reqs[n]
}

// Arrived receives the number (N) of each request the script answers as
// it arrives, before its reply, so a test can wait for the model to be asked without sleeping.
// It holds the last 1024 arrivals not yet received.
func (s *Server) Arrived() <-chan int { return s.arrived }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()}
	var refusal *Reply
	switch err := json.Unmarshal(body, &req.Chat); {
	case r.URL.Path != Path || r.Method != http.MethodPost:
		refusal = ptr(Error(http.StatusNotFound, "wrong path "+r.URL.Path))
	case s.key != "" && r.Header.Get("Authorization") != "Bearer "+s.key:
		refusal = ptr(JSON(http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`))
	case err != nil:
		refusal = ptr(Error(http.StatusBadRequest, err.Error()))
	}
	s.mu.Lock()
	if refusal == nil {
		s.answered++
		req.N = s.answered
	}
	s.reqs = append(s.reqs, req)
	script := s.script
	s.mu.Unlock()
	if refusal != nil {
		refusal.write(w, r, req, s.piece)
		return
	}
	select {
	case s.arrived <- req.N:
	default:
	}
	script(req).write(w, r, req, s.piece)
}

func ptr[T any](v T) *T { return &v }

// Request is one request as received.
type Request struct {
	N      int // from 1 among the requests the script answered; 0 for one refused
	Path   string
	Header http.Header
	Body   []byte // as sent, to compare bytes
	At     time.Time
	Chat   Chat // Body decoded
}

// Chat is the part of a chat completions request tests look at.
type Chat struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// Message is one message of a request.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	Reasoning  string `json:"reasoning_content,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// Map decodes the body into generic JSON, for fields Chat leaves out.
func (r Request) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request %d body is not JSON: %v\n%s", r.N, err, r.Body)
	}
	return m
}

// Last is the request's last message.
func (r Request) Last() Message {
	if len(r.Chat.Messages) == 0 {
		return Message{}
	}
	return r.Chat.Messages[len(r.Chat.Messages)-1]
}

// LastUser is the content of the request's last user message.
func (r Request) LastUser() string {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		if m := r.Chat.Messages[i]; m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// Has counts the messages of role whose content contains s.
func (r Request) Has(role, s string) int {
	n := 0
	for _, m := range r.Chat.Messages {
		if m.Role == role && strings.Contains(m.Content, s) {
			n++
		}
	}
	return n
}

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
		msg := map[string]any{"role": "assistant", "content": rep.Content}
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
