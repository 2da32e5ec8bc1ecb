package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// tipsAsked is how many times git was asked for ws's repository's tips.
func tipsAsked(t *testing.T, ws *Workspace) int {
	t.Helper()
	ws.secrets.mu.Lock()
	x := ws.secrets.idx
	ws.secrets.mu.Unlock()
	if x == nil {
		t.Fatal("the workspace has no secret index yet")
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.tips.asked
}

// The tips of the history are asked of git again whenever anything that
// names a commit changes: a secret committed in a commit no ref reached
// becomes a secret the moment any ref, packed ref, reflog entry, linked
// worktree or detached HEAD reaches it, with the tips read from the cache
// just before. Between changes, git is not asked at all.
func TestSecretTipsFollowEveryRefChange(t *testing.T) {
	old := tipsSettle
	tipsSettle = 0 // every change counts at once; the settling is tested below
	t.Cleanup(func() { tipsSettle = old })
	dir := t.TempDir()
	r := gitexectest.Init(t, dir)
	main := strings.TrimSpace(r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}}))
	ws := wsNew(t, dir, WorkspaceOptions{})
	read := NewReadFile(ws, Options{})
	git := func(args ...string) string { return gitexectest.Git(t, dir, args...) }
	// hidden makes a commit holding .env with content that nothing
	// reaches yet.
	hidden := func(content string) string {
		blob := strings.TrimSpace(gitexectest.Run(t, dir, gitexectest.Opts{Stdin: content}, "hash-object", "-w", "--stdin"))
		tree := strings.TrimSpace(gitexectest.Run(t, dir, gitexectest.Opts{Stdin: "100644 blob " + blob + "\t.env\n"}, "mktree"))
		return git("commit-tree", tree, "-p", main, "-m", "hidden")
	}
	for i, tc := range []struct {
		name  string
		point func(sha string)
	}{
		{"a new branch", func(sha string) { git("update-ref", "refs/heads/b1", sha) }},
		{"a tag, packed", func(sha string) { git("tag", "t1", sha); git("pack-refs", "--all") }},
		{"a branch moved there and back: its reflog", func(sha string) {
			git("update-ref", "refs/heads/b2", sha)
			git("update-ref", "refs/heads/b2", main)
		}},
		{"a linked worktree", func(sha string) { git("worktree", "add", "-q", "--detach", filepath.Join(t.TempDir(), "wt"), sha) }},
		{"HEAD detached there", func(sha string) { git("update-ref", "--no-deref", "HEAD", sha) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret := fmt.Sprintf("TOKEN=tips-secret-%d\n", i)
			name := fmt.Sprintf("notes%d.txt", i)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(secret), 0o644); err != nil {
				t.Fatal(err)
			}
			sha := hidden(secret)
			for range 2 {
				if got, err := runGitTool(t, read, map[string]any{"path": name}); err != nil || !strings.Contains(got, "tips-secret") {
					t.Fatalf("read %s before any ref reaches its secret = %q, %v", name, got, err)
				}
			}
			asked := tipsAsked(t, ws)
			if got, err := runGitTool(t, read, map[string]any{"path": name}); err != nil || !strings.Contains(got, "tips-secret") {
				t.Fatalf("read %s again = %q, %v", name, got, err)
			}
			if n := tipsAsked(t, ws) - asked; n != 0 {
				t.Errorf("git was asked for the tips %d times with no ref changed, want 0", n)
			}
			tc.point(sha)
			got, err := runGitTool(t, read, map[string]any{"path": name})
			if !errors.Is(err, ErrDenied) {
				t.Errorf("read %s once a ref reaches its secret = %q, %v; want ErrDenied", name, got, err)
			}
		})
	}
}

// A change newer than tipsSettle is not trusted to show in the stamp (two
// writes within one clock tick of the file system can share a time): until
// it settles, git is asked every time.
func TestSecretTipsNotTrustedWhileRefsSettle(t *testing.T) {
	dir := t.TempDir()
	gitexectest.Init(t, dir).Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}})
	ws := wsNew(t, dir, WorkspaceOptions{})
	read := NewReadFile(ws, Options{})
	for range 3 {
		if _, err := runGitTool(t, read, map[string]any{"path": "a.go"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := tipsAsked(t, ws); n < 2 {
		t.Errorf("git was asked for the tips %d times within %s of a commit, want every time", n, tipsSettle)
	}
}

// git reads refs through symlinks (a directory of refs linked from
// elsewhere, or a ref file that is a link), which the stamp cannot see
// behind: a ref written at the link's far end must still be found.
func TestSecretTipsSeeRefsBehindALink(t *testing.T) {
	old := tipsSettle
	tipsSettle = 0
	t.Cleanup(func() { tipsSettle = old })
	dir := t.TempDir()
	r := gitexectest.Init(t, dir)
	main := strings.TrimSpace(r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}}))
	git := func(args ...string) string { return gitexectest.Git(t, dir, args...) }
	ext := t.TempDir()
	if err := os.Symlink(ext, filepath.Join(dir, ".git", "refs", "heads", "ext")); err != nil {
		t.Fatal(err)
	}
	const secret = "TOKEN=tips-behind-link\n"
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	blob := strings.TrimSpace(gitexectest.Run(t, dir, gitexectest.Opts{Stdin: secret}, "hash-object", "-w", "--stdin"))
	tree := strings.TrimSpace(gitexectest.Run(t, dir, gitexectest.Opts{Stdin: "100644 blob " + blob + "\t.env\n"}, "mktree"))
	sha := git("commit-tree", tree, "-p", main, "-m", "hidden")
	ws := wsNew(t, dir, WorkspaceOptions{})
	read := NewReadFile(ws, Options{})
	for range 2 {
		if got, err := runGitTool(t, read, map[string]any{"path": "notes.txt"}); err != nil || !strings.Contains(got, "tips-behind-link") {
			t.Fatalf("read notes.txt before any ref reaches its secret = %q, %v", got, err)
		}
	}
	if err := os.WriteFile(filepath.Join(ext, "b"), []byte(strings.TrimSpace(sha)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(git("rev-parse", "refs/heads/ext/b")); got != strings.TrimSpace(sha) {
		t.Fatalf("git reads refs/heads/ext/b as %q", got)
	}
	if got, err := runGitTool(t, read, map[string]any{"path": "notes.txt"}); !errors.Is(err, ErrDenied) {
		t.Errorf("read notes.txt once a ref behind a link reaches its secret = %q, %v; want ErrDenied", got, err)
	}
}
