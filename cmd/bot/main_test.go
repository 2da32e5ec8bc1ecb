package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testRepo is a small checkout with a README and a secret.
func testRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"README.md":        "# Widget\n\nWidget turns sprockets into widgets.\n",
		"retry/backoff.go": "package retry\n\n// Backoff doubles the wait.\nfunc Backoff(n int) int { return 1 << n }\n",
		".env":             "SECRET=hunter2\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// fakeOpenAI answers chat completions from a script, one response per
// request, and records every request body. A request that asks to stream
// gets server-sent events, its text in small pieces. A script entry may
// also say "_hold": true (send the text, then wait for release or for the
// client to go away before finishing) or "_cut": true (send the text and
// close the stream unfinished).
type fakeOpenAI struct {
	mu       sync.Mutex
	script   []string // JSON of the assistant message: {"content":…} or {"tool_calls":[…]}
	requests []map[string]any
	release  chan struct{} // closed by the test to let held replies finish
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, body)
	n := len(f.requests)
	msg := `{"content":"out of script"}`
	if n <= len(f.script) {
		msg = f.script[n-1]
	}
	f.mu.Unlock()
	var m map[string]any
	_ = json.Unmarshal([]byte(msg), &m)
	hold, cut := m["_hold"] == true, m["_cut"] == true
	delete(m, "_hold")
	delete(m, "_cut")
	m["role"] = "assistant"
	finish := "stop"
	if _, ok := m["tool_calls"]; ok {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110, "prompt_tokens_details": map[string]any{"cached_tokens": 64}}
	if body["stream"] == true {
		f.stream(w, r, m, finish, usage, hold, cut)
		return
	}
	if hold {
		f.wait(r)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("c%d", n), "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": m, "finish_reason": finish}},
		"usage":   usage,
	})
}

// stream sends m as chat.completion.chunk events: its text a few runes at
// a time, its tool calls whole, then the finish reason and the usage.
func (f *fakeOpenAI) stream(w http.ResponseWriter, r *http.Request, m map[string]any, finish string, usage map[string]any, hold, cut bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(chunk map[string]any) {
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	delta := func(d map[string]any, finish any) map[string]any {
		return map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}}
	}
	text, _ := m["content"].(string)
	for runes := []rune(text); len(runes) > 0; {
		k := min(len(runes), 4)
		send(delta(map[string]any{"content": string(runes[:k])}, nil))
		runes = runes[k:]
	}
	if calls, ok := m["tool_calls"].([]any); ok {
		for i, c := range calls {
			c.(map[string]any)["index"] = i
		}
		send(delta(map[string]any{"tool_calls": calls}, nil))
	}
	if cut {
		return
	}
	if hold {
		f.wait(r)
	}
	send(delta(map[string]any{}, finish))
	send(map[string]any{"object": "chat.completion.chunk", "choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (f *fakeOpenAI) wait(r *http.Request) {
	select {
	case <-f.release:
	case <-r.Context().Done():
	}
}

// count is how many requests arrived.
func (f *fakeOpenAI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// lastUser is the content of the last user message of request i.
func (f *fakeOpenAI) lastUser(t testing.TB, i int) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.requests) {
		t.Fatalf("request %d was not made; %d requests", i, len(f.requests))
	}
	msgs, _ := f.requests[i]["messages"].([]any)
	for j := len(msgs) - 1; j >= 0; j-- {
		if m, _ := msgs[j].(map[string]any); m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

func TestAskWithDemoModel(t *testing.T) {
	repo := testRepo(t)
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"ask", "--repo", repo, "what is this?"}, envMap(nil), strings.NewReader(""), &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{`⏺ list_files {"path":"."}`, `⏺ read_file {"path":"README.md"}`, "demo model", "Widget turns sprockets into widgets", "OPENAI_API_KEY", "3 steps · 2 tool calls"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b[") {
		t.Error("colours must be used only on a terminal")
	}
	if !strings.Contains(errOut.String(), "Using the demo model") {
		t.Errorf("stderr lacks the demo notice: %s", errOut.String())
	}
}

func TestAskWithModelServer(t *testing.T) {
	repo := testRepo(t)
	fake := &fakeOpenAI{script: []string{
		`{"tool_calls":[{"id":"a","type":"function","function":{"name":"search_code","arguments":"{\"pattern\":\"Backoff\"}"}},{"id":"b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\".env\"}"}}]}`,
		`{"content":"Backoff doubles the wait: retry/backoff.go:3-4."}`,
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_MODEL": "m", "OPENAI_STREAM": "false"})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "--repo", repo, "how", "does", "retry", "work?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{"⏺ search_code", "✓ search_code", "✗ read_file", "retry/backoff.go:3-4", "200 tokens in (128 cached)"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if len(fake.requests) != 2 {
		t.Fatalf("requests = %d, want 2", len(fake.requests))
	}
	second, _ := json.Marshal(fake.requests[1]["messages"])
	if !strings.Contains(string(second), "retry/backoff.go") || strings.Contains(string(second), "hunter2") {
		t.Errorf("second request should carry the search result and never the secret: %s", second)
	}
	if !strings.Contains(string(second), "how does retry work?") {
		t.Errorf("question missing from the request: %s", second)
	}
}

func TestChatRemembers(t *testing.T) {
	repo := testRepo(t)
	fake := &fakeOpenAI{script: []string{`{"content":"It makes widgets."}`, `{"content":"Yes, from sprockets."}`}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_MODEL": "m", "OPENAI_STREAM": "false", "REPO_PATH": repo})
	var out, errOut bytes.Buffer
	stdin := strings.NewReader("what does it make?\nfrom what?\n/exit\n")
	if err := run(t.Context(), []string{"chat"}, env, stdin, &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "It makes widgets.") || !strings.Contains(out.String(), "Yes, from sprockets.") {
		t.Errorf("answers missing:\n%s", out.String())
	}
	if len(fake.requests) != 2 {
		t.Fatalf("requests = %d, want 2", len(fake.requests))
	}
	history, _ := json.Marshal(fake.requests[1]["messages"])
	for _, want := range []string{"what does it make?", "It makes widgets.", "from what?"} {
		if !strings.Contains(string(history), want) {
			t.Errorf("follow-up request lacks %q: %s", want, history)
		}
	}
}

func TestClearErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"missing repo", []string{"ask", "--repo", "/nonexistent/checkout", "q"}, nil, []string{`repository "/nonexistent/checkout" does not exist`, "--repo"}},
		{"serve without tokens", []string{"serve"}, nil, []string{"SLACK_BOT_TOKEN and SLACK_APP_TOKEN not set", "bot ask"}},
		{"serve with one token", nil, map[string]string{"SLACK_BOT_TOKEN": "xoxb-1"}, []string{"SLACK_APP_TOKEN not set"}},
		{"bot token as app token", nil, map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2-secret"}, []string{"SLACK_APP_TOKEN: want an app-level token, which starts with xapp-", "this one is a bot token"}},
		{"unreachable API", []string{"ask", "q"}, map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, []string{"127.0.0.1:1"}},
		{"unknown command", []string{"frobnicate"}, nil, []string{`unknown command "frobnicate"`}},
		{"ask without question", []string{"ask"}, nil, []string{"ask needs a question"}},
		{"repo choice without question", []string{"ask", "in widget:"}, map[string]string{"REPO_NAME": "widget", "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}, []string{`ask needs a question after "in widget:"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"REPO_PATH": testRepo(t)}
			for k, v := range tt.env {
				env[k] = v
			}
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			err := run(ctx, tt.args, envMap(env), strings.NewReader(""), &out, &errOut)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "sk-test") {
				t.Errorf("error leaks a credential: %v", err)
			}
		})
	}
}

// --repo DIR is the checkout the terminal answers about even when BOT_CONFIG
// lists repos; serve, which answers for those repos' channels, refuses it
// rather than ignoring it.
func TestRepoFlagWithConfigRepos(t *testing.T) {
	listed, other := testRepo(t), t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "README.md"), []byte("# Gadget\n\nGadget is the other checkout.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	yaml := fmt.Sprintf("repos:\n  - name: alpha\n    path: %s\n    channels: [\"*\"]\n", listed)
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	env := envMap(map[string]string{"BOT_CONFIG": cfgFile, "BOT_DATA_DIR": t.TempDir()})
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  string // in stdout
		bad   string // must not be in stdout
	}{
		{"ask with --repo", []string{"ask", "--repo", other, "what is this?"}, "", "Gadget is the other checkout", "Widget"},
		{"chat with --repo", []string{"chat", "--repo", other}, "what is this?\n/exit\n", "Gadget is the other checkout", "Widget"},
		{"ask without --repo", []string{"ask", "what is this?"}, "", "Widget turns sprockets", "Gadget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(t.Context(), tc.args, env, strings.NewReader(tc.stdin), &out, &errOut); err != nil {
				t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
			}
			if !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), tc.bad) {
				t.Errorf("output should contain %q and not %q:\n%s", tc.want, tc.bad, out.String())
			}
		})
	}
	t.Run("serve with --repo", func(t *testing.T) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), []string{"serve", "--repo", other}, env, strings.NewReader(""), &out, &errOut)
		var usage usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), "--repo conflicts with the repos in BOT_CONFIG") || !strings.Contains(err.Error(), cfgFile) {
			t.Errorf("err = %v, want a usage error naming the conflict and %s", err, cfgFile)
		}
	})
}

// bot sessions only reads: with no SQLite store yet it says so and creates
// neither the data directory nor an empty database.
func TestSessionsWithoutStore(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	for _, store := range []string{"", "sqlite"} {
		var out, errOut bytes.Buffer
		env := envMap(map[string]string{"REPO_PATH": testRepo(t), "BOT_DATA_DIR": dataDir, "BOT_STORE": store})
		if err := run(t.Context(), []string{"sessions"}, env, strings.NewReader(""), &out, &errOut); err != nil {
			t.Fatalf("BOT_STORE=%q: %v\nstderr: %s", store, err, errOut.String())
		}
		if want := "No sessions: no store at " + filepath.Join(dataDir, "askrepo.db"); !strings.Contains(out.String(), want) {
			t.Errorf("BOT_STORE=%q: output %q lacks %q", store, out.String(), want)
		}
		if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
			t.Fatalf("BOT_STORE=%q: bot sessions created %s (stat: %v)", store, dataDir, err)
		}
	}
}
