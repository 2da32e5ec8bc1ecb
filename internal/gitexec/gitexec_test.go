package gitexec_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// The fixture must bite: plain git in it runs the planted programs, or
// the tests below prove nothing.
func TestHostileFixtureBites(t *testing.T) {
	h := gitexectest.NewHostile(t)
	cmd := exec.Command("git", "ls-files")
	cmd.Dir = h.Dir
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git ls-files: %v\n%s", err, out)
	}
	if got := h.Ran(t); !strings.Contains(got, "evil.sh") {
		t.Fatalf("plain git ls-files in the hostile repository ran nothing (%q); the fixture is not armed", got)
	}
}

// Every command the project runs against a checkout, run through Git in
// the hostile repository, runs none of its programs.
func TestHostileRepositoryRunsNothing(t *testing.T) {
	h := gitexectest.NewHostile(t)
	gitDir := filepath.Join(h.Dir, ".git")
	for _, g := range []gitexec.Git{
		{Dir: h.Dir},
		{Dir: h.Dir, GitDir: gitDir, WorkTree: h.Dir},
		{Dir: filepath.Join(h.Dir, "docs"), GitDir: gitDir, WorkTree: h.Dir},
	} {
		for _, c := range []struct {
			args  []string
			stdin string
		}{
			{args: []string{"rev-parse", "--absolute-git-dir", "--show-toplevel", "--show-prefix"}},
			{args: []string{"ls-files", "-z", "-t", "--stage", "--deleted"}},
			{args: []string{"ls-files", "-z", "--others", "--exclude-standard"}},
			{args: []string{"config", "--get", "remote.origin.url"}},
			{args: []string{"log", "-p", "--stat", "--no-textconv", "--no-ext-diff", "-Sline"}},
			{args: []string{"show", "--no-textconv", "--no-ext-diff", "HEAD"}},
			{args: []string{"show", "HEAD:README.md"}},
			{args: []string{"blame", "--porcelain", "--no-textconv", "HEAD", "--", "README.md"}},
			{args: []string{"cat-file", "--batch", "--follow-symlinks"}, stdin: "HEAD:README.md\nHEAD:main.go\n"},
			{args: []string{"fetch", "origin"}},
		} {
			cmd := g.Command(t.Context(), c.args...)
			cmd.Stdin = strings.NewReader(c.stdin)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if g.Dir == h.Dir && c.args[0] != "fetch" && c.args[0] != "config" && err != nil {
				t.Errorf("git %s in %s: %v\n%s", strings.Join(c.args, " "), g.Dir, err, out.String())
			}
			h.Check(t, "git "+strings.Join(c.args, " "))
		}
	}
}

// The service's own git variables do not reach git: a GIT_DIR pointing at
// another repository, config injected through GIT_CONFIG_PARAMETERS or
// GIT_CONFIG_COUNT, an external diff (which log -p and diff would run in a
// repository that asks for nothing), a pager.
func TestServiceEnvironmentDoesNotReachGit(t *testing.T) {
	h := gitexectest.NewHostile(t) // only for its script and marker
	repo := gitexectest.NewRepo(t)
	other := t.TempDir()
	gitexectest.Git(t, other, "init", "--quiet")
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='"+h.Script+"'")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.pager")
	t.Setenv("GIT_CONFIG_VALUE_0", h.Script)
	t.Setenv("GIT_EXTERNAL_DIFF", h.Script)
	t.Setenv("GIT_PAGER", h.Script)
	t.Setenv("PAGER", h.Script)
	t.Setenv("GIT_ASKPASS", h.Script)
	t.Setenv("SSH_ASKPASS", h.Script)
	t.Setenv("LANG", "de_DE.UTF-8")
	g := gitexec.Git{Dir: repo}
	out, err := g.Command(t.Context(), "rev-parse", "--absolute-git-dir").Output()
	if err != nil {
		t.Fatalf("rev-parse: %v", err)
	}
	if got, want := strings.TrimSpace(string(out)), filepath.Join(repo, ".git"); got != want {
		t.Errorf("git dir = %s, want %s: the service's GIT_DIR reached git", got, want)
	}
	for _, args := range [][]string{
		{"ls-files"},
		{"log", "-p", "--no-ext-diff"},
		// Without --no-ext-diff: an inherited GIT_EXTERNAL_DIFF would
		// run; the hardening's empty diff.external makes git refuse
		// loudly instead.
		{"diff", "HEAD~1", "HEAD"},
	} {
		out, err := g.Command(t.Context(), args...).CombinedOutput()
		if err != nil && args[0] != "diff" {
			t.Errorf("git %s: %v\n%s", args[0], err, out)
		}
		h.Check(t, "git "+strings.Join(args, " ")+" with the service's GIT_ variables set")
	}
	env := strings.Join(g.Environ(), "\n")
	for _, bad := range []string{"GIT_DIR=", "GIT_WORK_TREE=", "GIT_CONFIG_PARAMETERS=", "GIT_EXTERNAL_DIFF=", "SSH_ASKPASS=", "LANG="} {
		if strings.Contains("\n"+env, "\n"+bad) {
			t.Errorf("environment keeps %s", bad)
		}
	}
}

// The operator's settings (credentials, an ssh command) reach git; the
// hardening cannot be overridden by them.
func TestOperatorSettings(t *testing.T) {
	g := gitexec.Git{
		Config:  [][2]string{{"http.https://example.com/.extraHeader", "Authorization: Basic c2VjcmV0"}, {"core.fsmonitor", "/bin/sh"}},
		Env:     []string{"GIT_SSH_COMMAND=ssh -i key", "GIT_CONFIG_COUNT=0"},
		Network: true,
	}
	cmd := g.Command(t.Context(), "config", "--get-regexp", `^(http\..*\.extraheader|core\.fsmonitor|protocol\..*)$`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git config: %v", err)
	}
	got := string(out)
	for _, want := range []string{"Authorization: Basic c2VjcmV0", "core.fsmonitor false", "protocol.https.allow always"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(strings.Join(cmd.Env, "\n"), "GIT_SSH_COMMAND=ssh -i key") {
		t.Error("the operator's GIT_SSH_COMMAND is not in the environment")
	}
	if strings.Contains(strings.Join(cmd.Args, " "), "c2VjcmV0") {
		t.Error("a credential is in argv")
	}
	offline, _ := gitexec.Git{}.Command(t.Context(), "config", "--get", "protocol.allow").Output()
	if strings.TrimSpace(string(offline)) != "never" {
		t.Errorf("without Network, protocol.allow = %q, want never", offline)
	}
}

// Commands that do run attribute drivers — a patch without --no-textconv,
// a diff against the working tree (clean filter), cat-file --filters
// (smudge and process filters) — run none of the repository's once
// WithoutDrivers has read their names. They may fail instead.
func TestWithoutDrivers(t *testing.T) {
	h := gitexectest.NewHostile(t)
	g, err := gitexec.Git{Dir: h.Dir}.WithoutDrivers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "main.go"), []byte("package changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		stdin string
	}{
		{args: []string{"log", "-p"}},
		{args: []string{"show", "--textconv", "HEAD:README.md"}},
		{args: []string{"diff", "HEAD~1", "HEAD"}},
		{args: []string{"diff", "--no-ext-diff", "--no-textconv"}},
		{args: []string{"diff", "--no-ext-diff", "--no-textconv", "--stat"}},
		{args: []string{"cat-file", "--filters", "HEAD:README.md"}},
		{args: []string{"cat-file", "--filters", "HEAD:main.go"}},
		{args: []string{"hash-object", "README.md", "main.go"}},
	} {
		cmd := g.Command(t.Context(), c.args...)
		cmd.Stdin = strings.NewReader(c.stdin)
		_ = cmd.Run() // a driver set to empty may make git fail: fine
		h.Check(t, "git "+strings.Join(c.args, " ")+" after WithoutDrivers")
	}
	// Without drivers, a plain repository's answer is unchanged.
	plain, err := gitexec.Git{Dir: gitexectest.NewRepo(t)}.WithoutDrivers(t.Context())
	if err != nil || len(plain.Config) != 0 {
		t.Errorf("WithoutDrivers on a plain repository = %v, %v; want no settings", plain.Config, err)
	}
}
