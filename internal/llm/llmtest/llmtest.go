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
