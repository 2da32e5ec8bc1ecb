package repos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/tools"
)

// A path repository whose config names a program for every key that can
// run one: opening it, leasing it, checking citations and syncing run
// none of them.
func TestHostilePathRepositoryRunsNothing(t *testing.T) {
	h := gitexectest.NewHostile(t)
	m := newManager(t, []Spec{{Name: "local", Path: h.Dir, Channels: []string{"*"}}}, Options{})
	h.Check(t, "opening the repository")
	l := acquire(t, m, "local")
	defer l.Release()
	if l.Commit != h.Head {
		t.Errorf("Commit = %q, want %s", l.Commit, h.Head)
	}
	_, valid, invalid, err := l.Cite(t.Context(), "See README.md:1 and main.go:2 and docs/guide.txt:9.")
	if err != nil || valid != 2 || invalid != 1 {
		t.Errorf("Cite = %d valid, %d invalid, %v; want 2, 1, nil", valid, invalid, err)
	}
	h.Check(t, "checking citations")
	if err := m.SyncNow(t.Context(), "local"); err != nil {
		t.Error(err)
	}
	m.Health()
	h.Check(t, "syncing")
}

// A url repository whose remote is such a repository, with .gitattributes
// asking for filters on every file: clone, fetch, worktree, citations and
// the git tools over the lease run none of its programs (the clone's
// config is askrepo's own, so no filter it names exists).
func TestHostileRemoteRunsNothing(t *testing.T) {
	h := gitexectest.NewHostile(t)
	data := t.TempDir()
	m := newManager(t, []Spec{{Name: "url", URL: "file://" + h.Dir, Channels: []string{"*"}}}, Options{DataDir: data})
	h.Check(t, "cloning and checking out")
	l := acquire(t, m, "url")
	if l.Commit != h.Head {
		t.Fatalf("Commit = %q, want %s", l.Commit, h.Head)
	}
	if got := readFile(t, filepath.Join(l.Dir, "README.md")); got != gitexectest.Files["README.md"]+"line four\n" {
		t.Errorf("checked-out README.md = %q: a filter changed it", got)
	}
	g, err := l.Workspace.Git(t.Context())
	if err != nil {
		t.Fatalf("the worktree's Workspace has no git: %v", err)
	}
	if !strings.HasPrefix(g.GitDir, data) && !strings.HasPrefix(g.GitDir, mustReal(t, data)) {
		t.Errorf("the worktree's git dir %s is not under the data directory %s", g.GitDir, data)
	}
	for _, tool := range []tools.Tool{
		tools.NewListFiles(l.Workspace, tools.Options{}),
		tools.NewGitLog(l.Workspace, tools.Options{}),
		tools.NewGitShow(l.Workspace, tools.Options{}),
	} {
		if _, err := tool.Run(t.Context(), json.RawMessage(`{}`)); err != nil {
			t.Errorf("%s over the lease: %v", tool.Definition().Name, err)
		}
	}
	if _, valid, _, err := l.Cite(t.Context(), "See README.md:4."); err != nil || valid != 1 {
		t.Errorf("Cite = %d valid, %v", valid, err)
	}
	l.Release()
	h.Check(t, "reading the lease")

	// A new commit upstream (made by the test's own, unhardened git, so
	// the marker it leaves is cleared) reaches a new worktree.
	os.WriteFile(filepath.Join(h.Dir, "docs", "guide.txt"), []byte("first\nsecond\nthird\n"), 0o644)
	gitexectest.Git(t, h.Dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
		"-c", "filter.evil.clean=", "-c", "filter.evil.smudge=", "-c", "filter.evilproc.process=", "commit", "--quiet", "-am", "third")
	head := gitexectest.Git(t, h.Dir, "rev-parse", "HEAD")
	os.Remove(h.Marker)
	if err := m.SyncNow(t.Context(), "url"); err != nil {
		t.Fatal(err)
	}
	l = acquire(t, m, "url")
	defer l.Release()
	if l.Commit != head {
		t.Errorf("after sync Commit = %s, want %s", l.Commit, head)
	}
	h.Check(t, "fetching and checking out again")
}

// A path repository whose .git is a file pointing at another repository
// is served from its files alone: neither the other repository's commit
// nor its origin is taken for the checkout's.
func TestPathRepositoryGitFileElsewhere(t *testing.T) {
	other := newRemote(t)
	other.commit("main", map[string]string{"secret-history.txt": "x"})
	gitexectest.Git(t, other.Dir, "remote", "add", "origin", "https://github.com/acme/other.git")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("mine\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+filepath.Join(other.Dir, ".git")+"\n"), 0o644)

	var logs logtest.Buffer
	m := newManager(t, []Spec{{Name: "local", Path: dir, Channels: []string{"*"}}}, Options{Logger: newLogger(&logs)})
	l := acquire(t, m, "local")
	defer l.Release()
	if l.Commit != "" || l.Remote != "" {
		t.Errorf("lease Commit, Remote = %q, %q; want both empty (the other repository's)", l.Commit, l.Remote)
	}
	files, err := l.Workspace.Files(t.Context())
	if err != nil || strings.Join(files, ",") != "mine.txt" {
		t.Errorf("Files = %v, %v; want [mine.txt]", files, err)
	}
	if _, valid, invalid, err := l.Cite(t.Context(), "See mine.txt:1 and secret-history.txt:1."); err != nil || valid != 1 || invalid != 1 {
		t.Errorf("Cite = %d valid, %d invalid, %v; want 1, 1: read from the files", valid, invalid, err)
	}
	if !strings.Contains(logs.String(), "git history is off for this checkout") {
		t.Errorf("log does not say git is off:\n%s", logs.String())
	}
}

func mustReal(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
