package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
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
	gitexectest.WriteFiles(t, dir, files)
	return dir
}

func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// newModel starts a model server (llmtest) that answers the n-th request
// with script[n-1] and "out of script" after the script ends. An entry is
// the JSON of an assistant message, {"content":…} and/or {"tool_calls":[…]};
// it may also say "_hold": true (send the text, then wait for release or
// for the client to go away before finishing) or "_cut": true (send the
// text and close the stream unfinished). A streamed text comes a few runes
// at a time; every reply reports 100 prompt tokens (64 cached) and 10 out.
func newModel(t testing.TB, release <-chan struct{}, script ...string) *llmtest.Server {
	t.Helper()
	return llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		msg := `{"content":"out of script"}`
		if r.N <= len(script) {
			msg = script[r.N-1]
		}
		rep := assistantReply(msg)
		rep.Usage = &llmtest.Usage{Prompt: 100, Cached: 64, Output: 10}
		if rep.WaitAfterText {
			rep.Wait = release
		}
		return rep
	}, llmtest.WithKey("sk-test"), llmtest.WithPiece(4))
}

// assistantReply is the reply carrying the assistant message msg (JSON),
// with newModel's "_hold" and "_cut" marks.
func assistantReply(msg string) llmtest.Reply {
	var m struct {
		llmtest.Message
		Hold bool `json:"_hold"`
		Cut  bool `json:"_cut"`
	}
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		panic(fmt.Sprintf("scripted message %s: %v", msg, err))
	}
	rep := llmtest.Reply{Content: m.Content, WaitAfterText: m.Hold, Cut: m.Cut}
	for _, c := range m.ToolCalls {
		rep.Calls = append(rep.Calls, llmtest.Call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments})
	}
	return rep
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
	fake := newModel(t, nil,
		`{"tool_calls":[{"id":"a","type":"function","function":{"name":"search_code","arguments":"{\"pattern\":\"Backoff\"}"}},{"id":"b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\".env\"}"}}]}`,
		`{"content":"Backoff doubles the wait: retry/backoff.go:3-4."}`,
	)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_MODEL": "m", "OPENAI_STREAM": "false"})
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
	if fake.Count() != 2 {
		t.Fatalf("requests = %d, want 2", fake.Count())
	}
	second, _ := json.Marshal(fake.Request(t, 1).Map(t)["messages"])
	if !strings.Contains(string(second), "retry/backoff.go") || strings.Contains(string(second), "hunter2") {
		t.Errorf("second request should carry the search result and never the secret: %s", second)
	}
	if !strings.Contains(string(second), "how does retry work?") {
		t.Errorf("question missing from the request: %s", second)
	}
}

func TestChatRemembers(t *testing.T) {
	repo := testRepo(t)
	fake := newModel(t, nil, `{"content":"It makes widgets."}`, `{"content":"Yes, from sprockets."}`)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_MODEL": "m", "OPENAI_STREAM": "false", "REPO_PATH": repo})
	var out, errOut bytes.Buffer
	stdin := strings.NewReader("what does it make?\nfrom what?\n/exit\n")
	if err := run(t.Context(), []string{"chat"}, env, stdin, &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "It makes widgets.") || !strings.Contains(out.String(), "Yes, from sprockets.") {
		t.Errorf("answers missing:\n%s", out.String())
	}
	if fake.Count() != 2 {
		t.Fatalf("requests = %d, want 2", fake.Count())
	}
	history, _ := json.Marshal(fake.Request(t, 1).Map(t)["messages"])
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
