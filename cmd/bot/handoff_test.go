package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/handoff"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

// botTool runs `bot tool args…` as its own process with env, and returns
// what it printed and its exit status.
func botTool(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(botPath, append([]string{"tool"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, t.TempDir(), &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("bot tool: %v", err)
	}
	return out.String(), errOut.String(), code
}

// handedCalls counts the calls the service ran for bot tool.
func handedCalls(p *proc) int { return strings.Count(p.logs.String(), `"msg":"ran a bot tool call"`) }

// bot tool beside a running bot serve on the same data directory and
// settings has the service run its call, and prints exactly what a local
// run prints, errors and exit status included. With other settings, with
// --local, or once the service is gone, it runs the call itself.
func TestToolHandedToTheService(t *testing.T) {
	w := newWorld(t, "REPO_PATH="+toolRepo(t))
	p := w.start()
	w.waitLog(p, `"msg":"taking bot tool calls"`)
	calls := []struct {
		name string
		args []string
		code int
		want string // a part of stdout
	}{
		{"a file", []string{"read_file", `{"path":"README.md"}`}, 0, "Widget turns sprockets"},
		{"a search through the index", []string{"search_code", `{"pattern":"Backoff"}`}, 0, "retry/use.go:3"},
		{"a search with no literal", []string{"search_code", `{"pattern":"\\w+\\("}`}, 0, "retry/backoff.go:4"},
		{"a symbol", []string{"find_symbol", `{"name":"Backoff"}`}, 0, "retry/backoff.go:4  func"},
		{"the map", []string{"repo_map", `{}`}, 0, "retry/backoff.go"},
		{"escaped output", []string{"search_code", `{"pattern":"Backoff \\x1b","include":"*.txt"}`}, 0, "evil.txt:1: Backoff "},
		{"a denied file", []string{"read_file", `{"path":".env"}`}, 1, "denied"},
		{"outside the checkout", []string{"read_file", `{"path":"../../etc/passwd"}`}, 1, "outside the workspace"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			before := handedCalls(p)
			out, errOut, code := botTool(t, w.env, c.args...)
			if handedCalls(p) != before+1 {
				t.Errorf("the service did not run the call (%d before, %d after)\n%s", before, handedCalls(p), errOut)
			}
			localOut, localErr, localCode := botTool(t, w.env, append([]string{"--local"}, c.args...)...)
			if handedCalls(p) != before+1 {
				t.Errorf("--local was handed to the service")
			}
			// stderr: the same error line; a local run also logs its index.
			if out != localOut || code != localCode || lineWith(errOut, "bot:") != lineWith(localErr, "bot:") {
				t.Errorf("handed over: %d\n%q\n%q\nlocal: %d\n%q\n%q", code, out, errOut, localCode, localOut, localErr)
			}
			if code != c.code || !strings.Contains(out, c.want) {
				t.Errorf("exit %d, stdout %q; want %d and %q", code, out, c.code, c.want)
			}
			if strings.ContainsAny(out+errOut, "\x1b\x07") || strings.Contains(out+errOut, "hunter2") {
				t.Errorf("raw control bytes or the secret printed:\n%q\n%q", out, errOut)
			}
		})
	}

	t.Run("other settings run here", func(t *testing.T) {
		before := handedCalls(p)
		env := append(append([]string(nil), w.env...), "REPO_DENY=README.md")
		out, errOut, code := botTool(t, env, "read_file", `{"path":"README.md"}`)
		if code != 1 || !strings.Contains(out, "denied") {
			t.Errorf("README.md denied here but read: exit %d\n%s\n%s", code, out, errOut)
		}
		if handedCalls(p) != before {
			t.Errorf("a call with other settings was handed to the service")
		}
		if !strings.Contains(errOut, "running the call here") || !strings.Contains(errOut, "settings") {
			t.Errorf("stderr does not say why the call runs here:\n%s", errOut)
		}
	})

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code = %d", code)
	}
	out, errOut, code := botTool(t, w.env, "find_symbol", `{"name":"Backoff"}`)
	if code != 0 || !strings.Contains(out, "retry/backoff.go:4  func") {
		t.Errorf("with the service gone: exit %d\n%s\n%s", code, out, errOut)
	}
}

// A relative checkout path (REPO_PATH's default is ".") names a different
// checkout from each working directory: a caller elsewhere must not get
// the service's checkout for its own, even when the directories share a
// name.
func TestToolKeyResolvesRelativePaths(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a", "app"), filepath.Join(root, "b", "app")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := func(string) (string, bool) { return "", false }
	key := func(dir string) string {
		t.Chdir(dir)
		cfg := config.Config{RepoPath: "."}
		specs, err := repos.PathOnly(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return toolKey(cfg, specs[0], env)
	}
	ka, kb := key(a), key(b)
	if ka == kb {
		t.Errorf("REPO_PATH=. in %s and in %s give the same key: the service would answer about the other checkout", a, b)
	}
	if key(a) != ka {
		t.Errorf("the key of one checkout changed between two calls")
	}
}

// A service that took the call (Accepted) and then stopped answering (it
// was stopped with SIGSTOP, or wedged) costs the caller at most the
// service's own bound on a call, after which it runs the call itself.
func TestToolRunsHereWhenTheServiceGoesSilent(t *testing.T) {
	defer func(s, i time.Duration) { handoffSlack, handoffIndexWait = s, i }(handoffSlack, handoffIndexWait)
	handoffSlack, handoffIndexWait = 0, 0
	data := t.TempDir()
	if err := os.Mkdir(filepath.Join(data, handoff.Dir), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", handoff.Path(data))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			json.NewEncoder(c).Encode(handoff.Response{Accepted: true})
		}
	}()
	cfg := config.Config{RepoPath: toolRepo(t), DataDir: data, ToolTimeout: 50 * time.Millisecond}
	env := func(string) (string, bool) { return "", false }
	call := tools.Call{ID: "cli", Name: "read_file", Input: json.RawMessage(`{"path":"README.md"}`)}
	done := make(chan error, 1)
	var handed bool
	go func() {
		var err error
		_, handed, err = handToService(t.Context(), cfg, env, toolTarget{}, call, nil, slog.New(slog.DiscardHandler))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || handed {
			t.Errorf("handToService = handed %v, %v; want the call left to this process", handed, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("bot tool still waits on a service that took its call and went silent")
	}
}
