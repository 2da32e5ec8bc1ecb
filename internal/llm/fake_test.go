package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// fakeAPI is an httptest server speaking the chat completions protocol:
// each request gets the next scripted reply (the last one repeats), and
// every request is recorded.
type fakeAPI struct {
	t   testing.TB
	srv *httptest.Server

	mu      sync.Mutex
	replies []reply
	reqs    []recorded
}

type recorded struct {
	body   []byte
	header http.Header
	at     time.Time
}

type reply func(w http.ResponseWriter, r *http.Request)

func newFakeAPI(t testing.TB, replies ...reply) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, recorded{body: body, header: r.Header.Clone(), at: time.Now()})
	rep := f.replies[min(n, len(f.replies)-1)]
	f.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "wrong path "+r.URL.Path, http.StatusNotFound)
		return
	}
	rep(w, r)
}

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// body decodes the n-th request body.
func (f *fakeAPI) body(n int) map[string]any {
	f.t.Helper()
	reqs := f.requests()
	if n >= len(reqs) {
		f.t.Fatalf("request %d was not made; %d requests", n, len(reqs))
	}
	var m map[string]any
	if err := json.Unmarshal(reqs[n].body, &m); err != nil {
		f.t.Fatalf("request %d body is not JSON: %v\n%s", n, err, reqs[n].body)
	}
	return m
}

// sse replies with one "data:" event per chunk, then [DONE].
func sse(chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			fl.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// sseCut sends chunks and closes the connection without [DONE] or a
// finish_reason, as a crashing server does.
func sseCut(chunks ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
	}
}

// jsonReply answers with a status, headers given as "Key: value", and body.
func jsonReply(status int, body string, headers ...string) reply {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ": ")
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// chunk builds one streamed chat.completion.chunk with the given delta and
// finish reason ("" for null).
func chunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}`
}

// usageChunk is the extra chunk sent with stream_options.include_usage.
func usageChunk(usage string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":` + usage + `}`
}

// completion builds a non-streamed chat.completion.
func completion(message, finish, usage string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":` + message + `,"finish_reason":"` + finish + `"}],"usage":` + usage + `}`
}

const testKey = "sk-test-0123456789abcdef"

// newTestClient builds a client for f with fast retries; edit adjusts cfg.
func newTestClient(t testing.TB, f *fakeAPI, edit func(*ClientConfig)) (*Client, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	cfg := ClientConfig{
		BaseURL:   f.srv.URL + "/v1",
		APIKey:    testKey,
		Model:     "test-model",
		RetryBase: time.Millisecond,
		RetryMax:  5 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(&lockedWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c, &logs
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// openaiDelta is one streamed tool-call delta as go-openai decodes it.
func openaiDelta(index *int, id, name, args string) openai.ToolCall {
	return openai.ToolCall{Index: index, ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}
