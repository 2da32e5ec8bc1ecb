package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// Opening reads the config of the .git directory git is expected to find
// while git says which one it uses. A .git directory that is no repository
// (git passes over it to the one above) has its config read for nothing:
// the drivers switched off are those of the repository git uses.
func TestGitConfigOfTheRepositoryGitUses(t *testing.T) {
	h := gitexectest.NewHostile(t)
	gitexectest.Git(t, h.Dir, "config", "remote.origin.url", "https://example.com/hostile.git")
	sub := filepath.Join(h.Dir, "docs")
	if err := os.Mkdir(filepath.Join(sub, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := wsNew(t, sub, WorkspaceOptions{})
	g, err := ws.Git(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if prefix, ok := ws.GitPrefix(t.Context()); prefix != "docs/" || !ok {
		t.Errorf("GitPrefix = %q, %v; want docs/", prefix, ok)
	}
	if got := ws.GitOrigin(t.Context()); got != "https://example.com/hostile.git" {
		t.Errorf("GitOrigin = %q, want the repository's", got)
	}
	wsWriteFiles(t, h.Dir, map[string]string{"README.md": "changed\n"})
	// A filter left on would run the planted one, which may never end.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, args := range [][]string{{"log", "-p", "--no-ext-diff"}, {"diff", "--no-ext-diff", "--stat"}} {
		_ = g.Command(ctx, args...).Run()
		h.Check(t, "git "+strings.Join(args, " ")+" through Workspace.Git")
	}
}
