package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// Flags may come anywhere, as people type them; -- ends them, so a
// question may start with "-"; an unknown flag is refused, not made part
// of the question.
func TestFlagsAnywhere(t *testing.T) {
	repo, other := testRepo(t), testRepo(t)
	if err := os.WriteFile(filepath.Join(other, "README.md"), []byte("# Gadget\n\nGadget is the other checkout.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		question string // the last user message the model gets
		model    string // the model name it gets
	}{
		{"flag after the question", []string{"ask", "what is this?", "--repo", other}, "what is this?", "m"},
		{"flags around the words", []string{"ask", "--model", "m2", "what", "--repo", other, "is", "this?"}, "what is this?", "m2"},
		{"a question starting with a dash", []string{"ask", "--repo", other, "--", "-v", "does", "what?"}, "-v does what?", "m"},
		{"-- as a flag's value", []string{"ask", "--model", "--", "--repo", other, "q"}, "q", "--"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newModel(t, nil, `{"content":"ok"}`)
			env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_MODEL": "m", "OPENAI_STREAM": "false", "REPO_PATH": repo})
			var out, errOut bytes.Buffer
			if err := run(t.Context(), tc.args, env, strings.NewReader(""), &out, &errOut); err != nil {
				t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
			}
			q := fake.Request(t, 0).LastUser()
			if !strings.HasSuffix(q, tc.question) || strings.Contains(q, "--repo") {
				t.Errorf("the model was asked %q, want a question ending in %q", q, tc.question)
			}
			if got := fake.Request(t, 0).Map(t)["model"]; got != tc.model {
				t.Errorf("model %q, want %q", got, tc.model)
			}
			if !strings.Contains(q, filepath.Base(other)) {
				t.Errorf("the question is not about %s: %q", other, q)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown flag after the question", []string{"ask", "what is this?", "--rpeo", other}, []string{"flag provided but not defined: -rpeo", "bot ask --help", "bot ask --"}},
		{"serve-only flag in ask", []string{"ask", "--http-addr", ":1", "q"}, []string{"flag provided but not defined: -http-addr"}},
		{"chat takes no question", []string{"chat", "what is this?"}, []string{"bot chat takes no arguments"}},
		{"serve takes no question", []string{"serve", "what is this?"}, []string{"serve takes no arguments", `bot ask "what is this?"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(t.Context(), tc.args, envMap(map[string]string{"REPO_PATH": repo}), strings.NewReader(""), &out, &errOut)
			if _, ok := errors.AsType[usageError](err); !ok {
				t.Fatalf("err = %v, want a usage error", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if out.Len() > 0 {
				t.Errorf("stdout: %s", out.String())
			}
		})
	}
}

// Every command has its own help, on stdout, exit 0, listing only the
// flags it takes.
func TestHelpPerCommand(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"--help"}, []string{"bot ask [flags]", "bot chat", "bot mcp", "bot sessions", "bot feedback [--since 7d]", "bot usage [flags]", "bot version"}, []string{"--http-addr"}},
		{[]string{"-h"}, []string{"bot ask [flags]"}, nil},
		{[]string{"help"}, []string{"bot ask [flags]"}, nil},
		{[]string{"ask", "--help"}, []string{"Usage: bot ask [flags] \"question\"", "--repo DIR", "--env-file FILE", "--max-steps N", "-v ", "-- ends them"}, []string{"--http-addr"}},
		{[]string{"ask", "what is this?", "-h"}, []string{"Usage: bot ask"}, nil},
		{[]string{"help", "ask"}, []string{"Usage: bot ask [flags] \"question\""}, []string{"--http-addr"}},
		{[]string{"chat", "--help"}, []string{"Usage: bot chat [flags]", "/help", "--repo DIR"}, []string{"--http-addr", "-- ends them"}},
		{[]string{"serve", "--help"}, []string{"Usage: bot [serve] [flags]", "--http-addr ADDR", "/mcp", "--repo DIR"}, nil},
		{[]string{"mcp", "--help"}, []string{"Usage: bot mcp [flags]", "MCP client", "--repo DIR", "--config FILE"}, []string{"--http-addr"}},
		{[]string{"--repo", ".", "--help"}, []string{"Usage: bot [serve] [flags]"}, nil},
		{[]string{"sessions", "--help"}, []string{"Usage: bot sessions [flags]", "--data-dir DIR", "--config FILE"}, []string{"--repo", "--model", "--http-addr"}},
		{[]string{"feedback", "--help"}, []string{"Usage: bot feedback [--since 7d] [--json]", "--since AGE", "--json", "--data-dir DIR"}, []string{"--by", "--repo", "--model", "--http-addr"}},
		{[]string{"help", "usage"}, []string{"Usage: bot usage [--since 30d] [--by channel|user|repo|model] [--json]", "--since AGE", "--by GROUP", "--json", "--config FILE"}, []string{"--repo", "--model", "--http-addr"}},
		{[]string{"version", "--help"}, []string{"Usage: bot version"}, []string{"Flags:"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(botPath, tc.args...)
			cmd.Dir = t.TempDir()
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("exit: %v\nstderr: %s", err, errOut.String())
			}
			if errOut.Len() > 0 {
				t.Errorf("stderr is not empty: %s", errOut.String())
			}
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("help lacks %q:\n%s", want, out.String())
				}
			}
			for _, not := range tc.not {
				if strings.Contains(out.String(), not) {
					t.Errorf("help shows %q:\n%s", not, out.String())
				}
			}
		})
	}
}

// bot --version and bot version print what the build stamped: -ldflags
// -X main.version/main.commit when given, else the checkout's revision as
// the go command records it.
func TestVersion(t *testing.T) {
	src := copyModule(t)
	gitexectest.Git(t, src, "init", "--quiet")
	gitexectest.Git(t, src, "add", "-A")
	gitexectest.Git(t, src, "commit", "--quiet", "-m", "build")
	head := gitexectest.Git(t, src, "rev-parse", "HEAD")
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		ldflags string
		want    []string
	}{
		{"stamped", "-X main.version=v9.8.7 -X main.commit=0123456789abcdef", []string{"bot v9.8.7, commit 0123456789abcdef, go1."}},
		{"from the checkout", "", []string{"bot v0.0.0-", ", commit " + head + ", go1."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(dir, tc.name)
			build := exec.Command("go", "build", "-buildvcs=true", "-ldflags", tc.ldflags, "-o", bin, "./cmd/bot")
			build.Dir = src
			build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			for _, args := range [][]string{{"--version"}, {"version"}} {
				out, err := exec.Command(bin, args...).Output()
				if err != nil {
					t.Fatalf("%s %v: %v", bin, args, err)
				}
				for _, want := range tc.want {
					if !strings.Contains(string(out), want) {
						t.Errorf("%v printed %q, want %q", args, out, want)
					}
				}
				if strings.Contains(string(out), "modified") {
					t.Errorf("%v printed %q for a clean checkout", args, out)
				}
			}
		})
	}
}

// copyModule copies the module's source (as it is on disk, without .git)
// into a new directory.
func copyModule(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		top := strings.Split(rel, string(filepath.Separator))[0]
		if top == ".git" || top == "data" || top == "bench" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a worktree's .git is a file
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || (top != "cmd" && top != "internal" && top != "go.mod" && top != "go.sum") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// Every problem a start can find comes at once: settings, the shape of the
// repositories in BOT_CONFIG, and what they need from the environment and
// the disk, each with its line where the file has one.
func TestConfigProblemsAtOnce(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	yaml := `log:
  level: loud
repos:
  - name: alpha
    path: /nonexistent/alpha
    channels: ["*"]
  - name: Beta
    url: https://github.com/acme/beta.git
    token_env: BETA_TOKEN
    channels: [xyz]
  - name: gamma
    url: https://github.com/acme/gamma.git
    token_env: GAMMA_TOKEN
    deny: ["[unclosed"]
    channels: ["*"]
`
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	env := envMap(map[string]string{"BOT_CONFIG": cfgFile, "OPENAI_STREAM": "maybe", "BOT_DATA_DIR": t.TempDir()})
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"ask", "q"}, env, strings.NewReader(""), &out, &errOut)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{
		"configuration: ",
		"\n  " + cfgFile + `: line 2: log.level: want one of debug, info, warn, error, got "loud"`,
		"\n  " + `OPENAI_STREAM: want true or false, got "maybe"`,
		"\n  " + cfgFile + `: line 7: repos[1] (Beta): name "Beta": use up to 64 lowercase`,
		"\n  " + cfgFile + `: line 7: repos[1] (Beta): channels: "xyz" is not a channel ID`,
		"\n  repository alpha: path /nonexistent/alpha is not a directory",
		"\n  repository Beta: token_env: the environment variable BETA_TOKEN is not set",
		"\n  repository gamma: token_env: the environment variable GAMMA_TOKEN is not set",
		"\n  repository gamma: deny: ",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
	if t.Failed() {
		return
	}
	if n := strings.Count(err.Error(), "\n  "); n < 8 {
		t.Errorf("%d problems listed, want every one on its own line:\n%s", n, err)
	}
	fmt.Fprint(&out, "") // nothing else to check on stdout
}
