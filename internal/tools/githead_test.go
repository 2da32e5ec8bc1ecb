package tools_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/tools"
)

// HEAD reached in ways the stamp does not follow file by file — a branch
// that is itself a symbolic ref, a HEAD that is a symlink (as git once
// wrote it) — still reads as git says, every time it moves.
func TestGitHeadOddRefs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(r *gitexectest.Repo)
	}{
		{"a branch that names another", func(r *gitexectest.Repo) {
			r.Git("symbolic-ref", "refs/heads/alias", "refs/heads/main")
			r.Git("symbolic-ref", "HEAD", "refs/heads/alias")
		}},
		{"a symlinked HEAD", func(r *gitexectest.Repo) {
			head := filepath.Join(r.Dir, ".git", "HEAD")
			if err := os.Remove(head); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("refs/heads/main", head); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := gitexectest.Init(t, "")
			r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}})
			tc.setup(r)
			ws, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			for i := range 3 {
				want := r.Git("rev-parse", "HEAD")
				if got, err := ws.GitHead(t.Context()); got != want || err != nil {
					t.Fatalf("GitHead after %d commits = %q, %v; want %s", i, got, err, want)
				}
				// On main, through the alias or the link: HEAD's own
				// file does not change, then main is packed.
				r.Commit(gitexectest.Commit{Write: map[string]string{"b.go": fmt.Sprintf("package a\n// %d\n", i)}})
				r.Git("pack-refs", "--all")
			}
		})
	}
}

// A checkout that is not a git repository has no HEAD, and says why.
func TestGitHeadWithoutGit(t *testing.T) {
	ws, err := tools.NewWorkspace(t.TempDir(), tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if got, err := ws.GitHead(t.Context()); got != "" || err == nil {
		t.Errorf("GitHead = %q, %v; want an error", got, err)
	}
}
