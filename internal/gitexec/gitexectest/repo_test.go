package gitexectest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

func TestCommitIsTheSameOnEveryRun(t *testing.T) {
	t.Setenv("GIT_AUTHOR_NAME", "Someone Else") // the caller's GIT_* must not leak in
	build := func() (*gitexectest.Repo, []string) {
		r := gitexectest.Init(t, "")
		return r, []string{
			r.Commit(gitexectest.Commit{Message: "add", Write: map[string]string{"a/b.txt": "one\n", "c.txt": "two\n"}}),
			r.Commit(gitexectest.Commit{Message: "move", Author: "Alice Example <alice@example.com>",
				Date: "2024-02-01T10:00:00+00:00", Rename: [2]string{"a/b.txt", "b.txt"}, Remove: []string{"c.txt"}}),
		}
	}
	r, first := build()
	_, second := build()
	if first[0] != second[0] || first[1] != second[1] {
		t.Fatalf("two builds of one history differ: %v and %v", first, second)
	}
	for _, tc := range []struct{ format, rev, want string }{
		{"%an <%ae> %cn %aI", first[0], "Test <test@example.com> Test 2024-01-01T12:00:00+00:00"},
		{"%an <%ae> %cn %aI", first[1], "Alice Example <alice@example.com> Alice Example 2024-02-01T10:00:00+00:00"},
	} {
		if got := r.Git("log", "-1", "--format="+tc.format, tc.rev); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.rev, got, tc.want)
		}
	}
	if got := r.Git("ls-files"); got != "b.txt" {
		t.Errorf("ls-files = %q, want b.txt alone", got)
	}
	if got := r.Git("symbolic-ref", "--short", "HEAD"); got != "main" {
		t.Errorf("branch %q, want main", got)
	}
}

func TestRemotePushAndClone(t *testing.T) {
	up := gitexectest.NewRemote(t)
	main := up.Push("main", gitexectest.Commit{Write: map[string]string{"README.md": "hi\n"}})
	side := up.Push("side", gitexectest.Commit{Write: map[string]string{"side.txt": "x\n"}})
	if got := gitexectest.Git(t, up.Bare, "rev-parse", "main", "side"); got != main+"\n"+side {
		t.Errorf("bare refs = %q, want %s and %s", got, main, side)
	}
	c := up.Clone(t)
	if got := c.Git("rev-parse", "HEAD"); got != main {
		t.Errorf("clone HEAD = %s, want %s", got, main)
	}
	if b, err := os.ReadFile(filepath.Join(c.Dir, "README.md")); err != nil || string(b) != "hi\n" {
		t.Errorf("clone README.md = %q, %v", b, err)
	}
}
