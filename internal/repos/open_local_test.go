package repos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// Opening a path repository and taking its first lease, as a one-shot
// command does, runs two git processes: one for the layout and HEAD, one
// for the config (drivers and origin). A second lease with HEAD where it
// was runs none; each later one after HEAD moved, one.
func TestPathRepositoryOpensWithTwoGitCalls(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup makes the checkout to serve and returns it, with the
		// commit its lease must report.
		setup      func(t *testing.T) (dir, commit string)
		wantCalls  int
		wantRemote string
	}{
		{"at the top of its repository", func(t *testing.T) (string, string) {
			r := gitexectest.Init(t, "")
			// A remote with no web view: no lease asks whether its
			// commit is pushed.
			r.Git("remote", "add", "origin", "file:///srv/git/widget.git")
			return r.Dir, r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}})
		}, 2, "file:///srv/git/widget.git"},
		{"through a symlink", func(t *testing.T) (string, string) {
			r := gitexectest.Init(t, "")
			head := r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}})
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(r.Dir, link); err != nil {
				t.Fatal(err)
			}
			return link, head
		}, 2, ""},
		{"no commit yet", func(t *testing.T) (string, string) {
			return gitexectest.Init(t, "").Dir, ""
		}, 2, ""},
		{"below the top of its repository", func(t *testing.T) (string, string) {
			r := gitexectest.Init(t, "")
			head := r.Commit(gitexectest.Commit{Write: map[string]string{"sub/dir/a.go": "package a\n"}})
			return filepath.Join(r.Dir, "sub", "dir"), head
		}, 2, ""},
		{"a detached HEAD", func(t *testing.T) (string, string) {
			r := gitexectest.Init(t, "")
			first := r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}})
			r.Commit(gitexectest.Commit{Write: map[string]string{"b.go": "package a\n"}})
			r.Git("checkout", "--quiet", "--detach", first)
			return r.Dir, first
		}, 2, ""},
		// A worktree's .git is a file naming another directory: git
		// is off for it, found by the one call.
		{"a worktree of another checkout", func(t *testing.T) (string, string) {
			r := gitexectest.Init(t, "")
			r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}})
			wt := filepath.Join(t.TempDir(), "wt")
			r.Git("worktree", "add", "--quiet", "--detach", wt)
			return wt, ""
		}, 1, ""},
		{"not a git repository", func(t *testing.T) (string, string) {
			dir := t.TempDir()
			gitexectest.WriteFiles(t, dir, map[string]string{"a.go": "package a\n"})
			return dir, ""
		}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, commit := tc.setup(t)
			calls := gitexectest.LogCalls(t)
			m := newManager(t, []Spec{{Name: "local", Path: dir, Channels: []string{"*"}}}, Options{})
			l := acquire(t, m, "local")
			if l.Commit != commit || l.Remote != tc.wantRemote {
				t.Errorf("lease at %q from %q, want %q from %q", l.Commit, l.Remote, commit, tc.wantRemote)
			}
			l.Release()
			if got := calls(); len(got) != tc.wantCalls {
				t.Errorf("opening and the first lease ran %d git processes, want %d:\n%s", len(got), tc.wantCalls, strings.Join(got, "\n"))
			}
			before := len(calls())
			acquire(t, m, "local").Release()
			if got := calls()[before:]; len(got) != 0 {
				t.Errorf("a second lease, HEAD unmoved, ran git: %q", got)
			}
		})
	}
}

// Every way HEAD moves reaches the next lease, however HEAD was read
// before: each lease reports the commit git itself says HEAD is at.
func TestPathLeaseSeesEveryHeadMove(t *testing.T) {
	r := gitexectest.Init(t, "")
	calls := gitexectest.LogCalls(t)
	m := newManager(t, []Spec{{Name: "local", Path: r.Dir, Channels: []string{"*"}}}, Options{})
	commit := func(name string) func() {
		return func() { r.Commit(gitexectest.Commit{Write: map[string]string{name: name + "\n"}}) }
	}
	var first, side string
	for _, step := range []struct {
		name string
		move func()
	}{
		{"nothing yet, then the first commit", commit("a.go")},
		{"commit", func() { first = r.Git("rev-parse", "HEAD"); commit("b.go")() }},
		{"a new branch, checked out", func() {
			r.Git("checkout", "--quiet", "-b", "side")
			commit("c.go")()
			side = r.Git("rev-parse", "HEAD")
		}},
		{"checkout of another branch", func() { r.Git("checkout", "--quiet", "main") }},
		{"update-ref of the branch HEAD names", func() { r.Git("update-ref", "refs/heads/main", side) }},
		{"pack-refs --all", func() { r.Git("pack-refs", "--all") }},
		// As a program other than git may write it: only packed-refs
		// says where the branch is now.
		{"packed-refs rewritten", func() { repack(t, r.Dir, side, first) }},
		{"commit on a packed branch", commit("d.go")},
		{"pack-refs --all then commit", func() { r.Git("pack-refs", "--all"); commit("e.go")() }},
		{"update-ref of a packed branch", func() { r.Git("pack-refs", "--all"); r.Git("update-ref", "refs/heads/main", side) }},
		{"reset", func() { r.Git("reset", "--quiet", "--hard", "HEAD~1") }},
		{"detach", func() { r.Git("checkout", "--quiet", "--detach", "side") }},
		{"commit on a detached HEAD", commit("f.go")},
		{"symbolic-ref", func() { r.Git("symbolic-ref", "HEAD", "refs/heads/main") }},
	} {
		step.move()
		want := r.Git("rev-parse", "HEAD")
		before := len(calls())
		l := acquire(t, m, "local")
		if l.Commit != want {
			t.Errorf("after %s: lease Commit = %s, want %s", step.name, l.Commit, want)
		}
		l.Release()
		if n := len(calls()) - before; n > 1 {
			t.Errorf("after %s: a lease ran %d git processes, want at most 1", step.name, n)
		}
	}
}

// repack replaces commit old by new in dir's packed-refs, writing a new
// file and renaming it into place.
func repack(t *testing.T, dir, old, new string) {
	t.Helper()
	packed := filepath.Join(dir, ".git", "packed-refs")
	b, err := os.ReadFile(packed)
	if err != nil || !strings.Contains(string(b), old) {
		t.Fatalf("packed-refs has no %s: %v\n%s", old, err, b)
	}
	tmp := packed + ".new"
	if err := os.WriteFile(tmp, []byte(strings.ReplaceAll(string(b), old, new)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, packed); err != nil {
		t.Fatal(err)
	}
}
