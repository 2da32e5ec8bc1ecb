package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Chat commands are handled in the terminal, never sent to the model: /help
// lists them, an unknown one says so. A line that only starts with a slash
// (a path) is a question, and // sends a question starting with /.
func TestChatCommands(t *testing.T) {
	fake := newModel(t, nil, `{"content":"one"}`, `{"content":"two"}`)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_STREAM": "false", "REPO_PATH": testRepo(t)})
	var out, errOut bytes.Buffer
	stdin := strings.NewReader("/help\n/nope\n//reset?\n/etc/hosts is read where?\n/reset\n/exit\nnot asked\n")
	if err := run(t.Context(), []string{"chat"}, env, stdin, &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	for _, want := range []string{"Commands:", "/help", "/reset", "/exit, /quit", "Ctrl-C stops the answer", "(new conversation)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if want := "unknown command /nope; /help lists the commands"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
	}
	if fake.Count() != 2 {
		t.Fatalf("the model got %d requests, want 2 (only the questions)", fake.Count())
	}
	for i, want := range []string{"/reset?", "/etc/hosts is read where?"} {
		if q := fake.Request(t, i).LastUser(); !strings.HasSuffix(q, want) || strings.HasSuffix(q, "/"+want) {
			t.Errorf("question %d = %q, want it to end in %q", i, q, want)
		}
	}
}

// A Ctrl-C while an answer is written stops that answer and returns to the
// prompt; the conversation goes on with what it had. A second Ctrl-C in a
// row quits, with status 0, whether the first stopped an answer or came
// at an idle prompt.
func TestChatCtrlC(t *testing.T) {
	for _, tc := range []struct {
		name string
		// after the stopped answer: more questions and Ctrl-Cs, as steps
		// "ask:…" and "ctrl-c" with what to wait for after each ("prompt":
		// the answer is over and the prompt is back, so a Ctrl-C is at
		// the prompt and not a late stop of the answer)
		steps []string
	}{
		{"stop, then quit", []string{"ctrl-c"}},
		{"stop, ask again, then two at the prompt", []string{"ask:and now?", "wait:Second answer.", "prompt", "ctrl-c", "wait:(Ctrl-C again or Ctrl-D quits)", "ctrl-c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			fake := newModel(t, release, `{"content":"Thinking it over","_hold":true}`, `{"content":"Second answer."}`)
			defer close(release)
			env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "REPO_PATH": testRepo(t)})
			intr := make(chan os.Signal, 1)
			stdin, typing := io.Pipe()
			defer typing.Close()
			out, errOut := &lockedBuffer{}, &lockedBuffer{}
			done := make(chan error, 1)
			go func() {
				done <- run(withInterrupts(t.Context(), intr), []string{"chat"}, env, stdin, out, errOut)
			}()
			io.WriteString(typing, "first question\n")
			waitFor(t, out, "Thinking it over")
			intr <- os.Interrupt
			waitFor(t, out, "(stopped; Ctrl-C again or Ctrl-D quits)")
			for _, step := range tc.steps {
				switch {
				case step == "ctrl-c":
					intr <- os.Interrupt
				case strings.HasPrefix(step, "ask:"):
					io.WriteString(typing, strings.TrimPrefix(step, "ask:")+"\n")
				case step == "prompt":
					waitUntil(t, out, "no prompt after the answer", func(s string) bool { return strings.HasSuffix(s, "\n> ") })
				case strings.HasPrefix(step, "wait:"):
					waitFor(t, out, strings.TrimPrefix(step, "wait:"))
				}
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("chat still running:\n%s", out.String())
			}
			if fake.Count() > 1 {
				history, _ := json.Marshal(fake.Request(t, 1).Map(t)["messages"])
				if !strings.Contains(string(history), "first question") {
					t.Errorf("the stopped question is not in the conversation: %s", history)
				}
			}
		})
	}
}

// The real binary: Ctrl-C stops bot ask with status 130; in bot chat it
// stops the answer, and a second one quits with 0.
func TestCtrlCSignals(t *testing.T) {
	release := make(chan struct{})
	fake := newModel(t, release, `{"content":"Thinking it over","_hold":true}`, `{"content":"Thinking it over","_hold":true}`)
	defer close(release)
	repo := testRepo(t)
	for _, tc := range []struct {
		name     string
		args     []string
		stdin    string
		then     string // after the first Ctrl-C, wait for this, then Ctrl-C again
		wantCode int
	}{
		{"ask", []string{"ask", "what?"}, "", "", 130},
		{"chat", []string{"chat"}, "what?\n", "(stopped; Ctrl-C again or Ctrl-D quits)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(botPath, tc.args...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+fake.URL, "REPO_PATH="+repo)
			out := &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			io.WriteString(stdin, tc.stdin)
			waitFor(t, out, "Thinking it over")
			cmd.Process.Signal(syscall.SIGINT)
			if tc.then != "" {
				waitFor(t, out, tc.then)
				cmd.Process.Signal(syscall.SIGINT)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				code := 0
				if exit, ok := errors.AsType[*exec.ExitError](err); ok {
					code = exit.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if code != tc.wantCode {
					t.Errorf("exit status %d, want %d\n%s", code, tc.wantCode, out.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("still running 10s after Ctrl-C:\n%s", out.String())
			}
		})
	}
}
