package slackbot

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

// fakeOpenAI is an httptest server speaking OpenAI's chat completions API,
// plain JSON and server-sent events, driven by a script that sees each
// request. It records every request so tests can check what the model was
// sent (the thread's history on a follow-up, for instance).
type fakeOpenAI struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []chatRequest
	bodies   [][]byte // raw, as sent
	script   func(chatRequest) fakeReply
	calls    int
}

type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type chatMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// fakeReply is one scripted answer: an HTTP error, or an assistant message
// with text and/or tool calls. Wait, when set, holds the answer until it is
// closed (or the client gives up), so tests order things without sleeping.
type fakeReply struct {
	Status  int
	Content string
	Calls   []fakeCall
	Wait    <-chan struct{}
	Prompt  int
	Cached  int
	Output  int
}

type fakeCall struct{ Name, Args string }

func newFakeOpenAI(t testing.TB, script func(chatRequest) fakeReply) *fakeOpenAI {
	t.Helper()
	f := &fakeOpenAI{script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the base URL a client takes, /v1 included.
func (f *fakeOpenAI) URL() string { return f.srv.URL + "/v1" }

func (f *fakeOpenAI) Requests() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatRequest(nil), f.requests...)
}

// Bodies returns the raw request bodies, to compare bytes.
func (f *fakeOpenAI) Bodies() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.bodies...)
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req chatRequest
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, err.Error())
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.bodies = append(f.bodies, body)
	f.calls++
	n := f.calls
	script := f.script
	f.mu.Unlock()

	rep := script(req)
	if rep.Wait != nil {
		select {
		case <-rep.Wait:
		case <-r.Context().Done():
			return
		}
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d","type":"server_error"}}`, rep.Status)
		return
	}
	if rep.Prompt == 0 {
		rep.Prompt, rep.Output = 100*len(req.Messages), 20
	}
	id := fmt.Sprintf("chatcmpl-%d", n)
	calls := make([]map[string]any, len(rep.Calls))
	for i, c := range rep.Calls {
		calls[i] = map[string]any{
			"id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args},
		}
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{
		"prompt_tokens": rep.Prompt, "completion_tokens": rep.Output, "total_tokens": rep.Prompt + rep.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": rep.Cached},
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": rep.Content}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	// Streamed: the text in two chunks, each tool call as a name chunk and
	// an arguments chunk, then finish_reason, then usage with no choices
	// (what stream_options.include_usage produces), then [DONE].
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	chunk := func(choices []any, extra map[string]any) {
		m := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model, "choices": choices}
		for k, v := range extra {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	delta := func(d map[string]any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}
	}
	chunk(delta(map[string]any{"role": "assistant", "content": ""}), nil)
	if rep.Content != "" {
		half := len(rep.Content) / 2
		chunk(delta(map[string]any{"content": rep.Content[:half]}), nil)
		chunk(delta(map[string]any{"content": rep.Content[half:]}), nil)
	}
	for i, c := range calls {
		fn := c["function"].(map[string]any)
		chunk(delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c["id"], "type": "function", "function": map[string]any{"name": fn["name"], "arguments": ""},
		}}}), nil)
		chunk(delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "function": map[string]any{"arguments": fn["arguments"]},
		}}}), nil)
	}
	chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	chunk([]any{}, map[string]any{"usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// question is the text of the last user message of a request, without the
// context preamble the bot puts in front of a session's first question.
func (r chatRequest) question() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == "user" && !strings.HasPrefix(m.Content, "[note") {
			q := m.Content
			if i := strings.Index(q, "</context>"); i >= 0 {
				q = q[i+len("</context>"):]
			}
			return strings.TrimSpace(q)
		}
	}
	return ""
}

func (r chatRequest) last() chatMessage {
	if len(r.Messages) == 0 {
		return chatMessage{}
	}
	return r.Messages[len(r.Messages)-1]
}

// readThenAnswer is the model most tests use: asked a question, it reads
// README.md and lists the root in one step; given the results, it answers
// "Answer to: <question>". It is stateless, so concurrent threads cannot
// confuse it.
func readThenAnswer(r chatRequest) fakeReply {
	if r.last().Role == "tool" {
		return fakeReply{Content: "**Answer** to: " + r.question(), Prompt: 1200, Cached: 800, Output: 40}
	}
	return fakeReply{
		Calls:  []fakeCall{{"read_file", `{"path":"README.md"}`}, {"list_files", `{"path":"."}`}},
		Prompt: 1000, Cached: 0, Output: 30,
	}
}
