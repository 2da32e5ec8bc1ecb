// Package gitexectest builds git repositories for tests: histories with
// fixed identities and dates (Repo, Commit), a bare file:// remote to push
// to and clone (Remote), a plain repository, and a hostile one whose config
// names a program for every key that can run one.
//
// It is a test kit: only _test.go files import it (the import-rules test
// keeps it so), and it imports nothing of askrepo, so the tests of every
// package that runs git, gitexec's own included, can use it.
package gitexectest

import (
	"os"
	"path/filepath"
	"testing"
)

// Hostile is a repository whose .git/config (and a file it includes)
// sets every key that makes git run a program — fsmonitor, hooks,
// filters, diff drivers, pager, editor, askpass, credential helper, ssh
// command, proxy, signature verifier — to a script that appends a line to
// Marker. Any git command askrepo runs in it must leave Marker absent.
type Hostile struct {
	Dir    string // the working tree (a normal checkout with .git inside)
	Marker string // created by the script when anything ran it
	Script string // the program every key names
	Head   string // the last commit
}

// Files are the committed files of a Hostile repository. Every one is
// covered by a filter and a diff driver in .gitattributes.
var Files = map[string]string{
	".gitattributes": "* filter=evil diff=evil merge=evil\n*.go filter=evilproc\n",
	"README.md":      "# hostile\n\nline three\n",
	"main.go":        "package main\n\nfunc main() {}\n",
	"docs/guide.txt": "first\nsecond\n",
}

// NewHostile creates the repository in a new temporary directory, with two
// commits (so there are diffs to show and blame), then arms its config.
func NewHostile(t testing.TB) *Hostile {
	t.Helper()
	base := t.TempDir()
	h := &Hostile{
		Dir:    filepath.Join(base, "repo"),
		Marker: filepath.Join(base, "RAN"),
		Script: filepath.Join(base, "evil.sh"),
	}
	Git(t, base, "init", "--quiet", "--initial-branch=main", h.Dir)
	for name, content := range Files {
		write(t, filepath.Join(h.Dir, name), content)
	}
	Git(t, h.Dir, "add", "-A")
	Git(t, h.Dir, "commit", "--quiet", "-m", "first")
	write(t, filepath.Join(h.Dir, "README.md"), Files["README.md"]+"line four\n")
	write(t, filepath.Join(h.Dir, "main.go"), Files["main.go"]+"// more\n")
	Git(t, h.Dir, "commit", "--quiet", "-am", "second")
	h.Head = Git(t, h.Dir, "rev-parse", "HEAD")
	h.arm(t, base)
	// An untracked file, so that listings have both kinds.
	write(t, filepath.Join(h.Dir, "notes.txt"), "untracked\n")
	return h
}

// hooks are the hook names worth planting: the ones checkout, index
// updates, ref updates, gc and fsmonitor run.
var hooks = []string{"post-checkout", "post-index-change", "reference-transaction",
	"pre-auto-gc", "post-merge", "post-rewrite", "fsmonitor-watchman", "pre-commit"}

func (h *Hostile) arm(t testing.TB, base string) {
	t.Helper()
	// The script records who ran it and passes stdin through, as a clean
	// or smudge filter or a textconv would.
	write(t, h.Script, "#!/bin/sh\necho \"$0 $*\" >> '"+h.Marker+"'\ncat >/dev/null 2>&1 || true\nexit 0\n")
	if err := os.Chmod(h.Script, 0o755); err != nil {
		t.Fatal(err)
	}
	hookDir := filepath.Join(base, "hooks")
	for _, dir := range []string{hookDir, filepath.Join(h.Dir, ".git", "hooks")} {
		for _, name := range hooks {
			p := filepath.Join(dir, name)
			write(t, p, "#!/bin/sh\necho \"hook "+name+" $*\" >> '"+h.Marker+"'\n")
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The fsmonitor comes through an included file, which git reads as
	// part of the repository's config.
	inc := filepath.Join(base, "included.cfg")
	write(t, inc, "[core]\n\tfsmonitor = "+h.Script+"\n")
	cfg := filepath.Join(h.Dir, ".git", "config")
	bang := "!" + h.Script
	for _, kv := range [][2]string{
		{"include.path", inc},
		{"core.hooksPath", hookDir},
		{"filter.evil.clean", h.Script},
		{"filter.evil.smudge", h.Script},
		{"filter.evilproc.process", h.Script},
		{"diff.evil.textconv", h.Script},
		{"diff.evil.command", h.Script},
		{"merge.evil.driver", h.Script},
		{"diff.external", h.Script},
		{"core.pager", h.Script},
		{"pager.log", h.Script},
		{"pager.show", h.Script},
		{"pager.blame", h.Script},
		{"core.editor", h.Script},
		{"sequence.editor", h.Script},
		{"core.askPass", h.Script},
		{"credential.helper", bang},
		{"core.sshCommand", h.Script},
		{"core.gitProxy", h.Script},
		{"core.alternateRefsCommand", h.Script},
		{"gpg.program", h.Script},
		{"gpg.ssh.program", h.Script},
		{"log.showSignature", "true"},
		{"remote.origin.uploadpack", h.Script},
		{"uploadpack.packObjectsHook", h.Script},
	} {
		Git(t, h.Dir, "config", "--file", cfg, "--add", kv[0], kv[1])
	}
}

// Ran returns what the script recorded, "" when nothing ran it.
func (h *Hostile) Ran(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(h.Marker)
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Check fails the test when anything ran the script, naming what.
func (h *Hostile) Check(t testing.TB, what string) {
	t.Helper()
	if got := h.Ran(t); got != "" {
		t.Errorf("%s ran a program the repository's config named:\n%s", what, got)
		os.Remove(h.Marker)
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// NewRepo creates a plain repository with two commits of Files in a new
// temporary directory and returns its path.
func NewRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plain")
	Git(t, filepath.Dir(dir), "init", "--quiet", "--initial-branch=main", dir)
	for name, content := range Files {
		if name != ".gitattributes" {
			write(t, filepath.Join(dir, name), content)
		}
	}
	Git(t, dir, "add", "-A")
	Git(t, dir, "commit", "--quiet", "-m", "first")
	write(t, filepath.Join(dir, "README.md"), Files["README.md"]+"line four\n")
	Git(t, dir, "commit", "--quiet", "-am", "second")
	return dir
}
