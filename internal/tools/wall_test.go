//go:build unix

package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wallRegistry is every tool over ws behind one registry, as a turn has
// them.
func wallRegistry(ws *Workspace) *Registry {
	return NewRegistry(NewListFiles(ws), NewGlob(ws), NewSearchCode(ws, SearchCodeOptions{}), NewReadFile(ws),
		NewGitLog(ws, GitOptions{}), NewGitShow(ws, GitOptions{}), NewGitBlame(ws, GitOptions{}))
}

// wallCall runs one call through r and returns what the model would read.
func wallCall(t *testing.T, r *Registry, name string, args map[string]any) string {
	t.Helper()
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return r.Run(t.Context(), Call{ID: "c", Name: name, Input: in}).Content
}

// A repository can replace any object with another (refs/replace/, or
// core.useReplaceRefs turning that back on): a public file's blob
// replaced by a secret one keeps its public id in every tree, so the
// secret-blob check passes it, while git prints the replacement. The
// tools read objects as they are stored.
func TestReplacedObjectsShowAsStored(t *testing.T) {
	const secret = "API_KEY=replaced-secret\n"
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	sha := histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add env", write: map[string]string{".env": secret}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Remove env", remove: []string{".env"}},
		{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Add readme", write: map[string]string{"README.md": "hello\n"}},
	})
	envBlob := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", sha["Add env"]+":.env"))
	readmeBlob := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", "HEAD:README.md"))
	histGit(t, dir, nil, "replace", readmeBlob, envBlob)
	// Explicitly on, which the environment variable alone does not beat.
	histGit(t, dir, nil, "config", "core.useReplaceRefs", "true")
	// And the deprecated way of rewriting parents: "Add readme" as a
	// root commit would hide the history before it.
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "grafts"), []byte(sha["Add readme"]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{GitShowName, map[string]any{"commit": "HEAD", "path": "README.md"}},
		{GitBlameName, map[string]any{"path": "README.md"}},
		{GitBlameName, map[string]any{"path": "README.md", "commit": "HEAD"}},
		{GitLogName, map[string]any{"pickaxe": "replaced-secret"}},
	} {
		out := wallCall(t, r, c.name, c.args)
		// git_log repeats the pickaxe it was given; a commit listed is
		// what would confirm the text.
		leaked := strings.Contains(out, "replaced-secret")
		if c.name == GitLogName {
			leaked = !strings.HasPrefix(out, "no commits")
		}
		if leaked {
			t.Errorf("%s %v shows or confirms the secret a replace ref put in README.md:\n%s", c.name, c.args, out)
		}
		if c.name != GitLogName && !strings.Contains(out, "hello") {
			t.Errorf("%s %v does not show README.md as stored:\n%s", c.name, c.args, out)
		}
	}
	if out := wallCall(t, r, GitLogName, map[string]any{}); !strings.HasPrefix(out, "3 commits") {
		t.Errorf("git_log follows info/grafts instead of the stored parents:\n%s", out)
	}
}
