//go:build unix

package tools

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// everyTool is each tool over ws with arguments that make it run git the
// way a turn would: listings, searches, and every git history tool.
func everyTool(ws *Workspace) []struct {
	tool Tool
	args string
} {
	return []struct {
		tool Tool
		args string
	}{
		{NewListFiles(ws, Options{}), `{"recursive":true}`},
		{NewGlob(ws, Options{}), `{"pattern":"**/*"}`},
		{NewSearchCode(ws, Options{}), `{"pattern":"line"}`},
		{NewReadFile(ws, Options{}), `{"path":"README.md"}`},
		{NewGitLog(ws, Options{}), `{}`},
		{NewGitLog(ws, Options{}), `{"path":"README.md"}`},
		{NewGitLog(ws, Options{}), `{"pickaxe":"four","grep":"second"}`},
		{NewGitShow(ws, Options{}), `{"commit":"HEAD"}`},
		{NewGitShow(ws, Options{}), `{"commit":"HEAD","path":"README.md"}`},
		{NewGitShow(ws, Options{}), `{"commit":"HEAD","path":"main.go"}`},
		{NewGitBlame(ws, Options{}), `{"path":"README.md"}`},
		{NewGitBlame(ws, Options{}), `{"path":"main.go"}`},
	}
}

// A checkout whose config (and a file it includes) names a program for
// every key that can run one, with .gitattributes asking for filters and
// diff drivers on every file: no tool runs any of them.
func TestHostileCheckoutRunsNothing(t *testing.T) {
	h := gitexectest.NewHostile(t)
	ws := wsNew(t, h.Dir, WorkspaceOptions{})
	files, err := ws.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h.Check(t, "listing the checkout")
	// The listing came from git: an ignored file would show otherwise.
	if !slices.Contains(files, "notes.txt") || !slices.Contains(files, "main.go") {
		t.Errorf("Files = %v, want the tracked and the untracked files", files)
	}
	for _, c := range everyTool(ws) {
		out, err := runText(t.Context(), c.tool, json.RawMessage(c.args))
		if err != nil {
			t.Errorf("%s %s: %v", c.tool.Definition().Name, c.args, err)
		}
		if strings.Contains(out, "evil.sh") {
			t.Errorf("%s %s printed what a planted program wrote:\n%s", c.tool.Definition().Name, c.args, out)
		}
		h.Check(t, c.tool.Definition().Name+" "+c.args)
	}
}

// The service's own git variables reach none of the git the tools run: a
// GIT_DIR or GIT_WORK_TREE would show another repository, and config
// through GIT_CONFIG_PARAMETERS or GIT_CONFIG_COUNT would run a program.
func TestServiceGitEnvironmentIgnored(t *testing.T) {
	h := gitexectest.NewHostile(t) // only for its script and marker
	repo := gitexectest.NewRepo(t)
	other := t.TempDir()
	wsWriteFiles(t, other, map[string]string{"other-only.txt": "x\n"})
	wsGit(t, other, "init", "-q")
	wsGit(t, other, "add", ".")
	wsGit(t, other, "commit", "-q", "-m", "other repository")
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='"+h.Script+"'")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_0", h.Script)
	t.Setenv("GIT_EXTERNAL_DIFF", h.Script)

	ws := wsNew(t, repo, WorkspaceOptions{})
	files, err := ws.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(files, "other-only.txt") || !slices.Contains(files, "README.md") {
		t.Errorf("Files = %v, want the checkout's own files", files)
	}
	h.Check(t, "listing with the service's GIT_ variables set")
	for _, c := range everyTool(ws) {
		out, err := runText(t.Context(), c.tool, json.RawMessage(c.args))
		if err != nil {
			t.Errorf("%s %s: %v", c.tool.Definition().Name, c.args, err)
		}
		if strings.Contains(out, "other repository") {
			t.Errorf("%s %s shows the repository GIT_DIR names:\n%s", c.tool.Definition().Name, c.args, out)
		}
		h.Check(t, c.tool.Definition().Name+" "+c.args+" with the service's GIT_ variables set")
	}
}

// A .git file (as git writes for linked worktrees and submodules) can
// point git anywhere on the host. A checkout whose .git is such a file, or
// a symlink, or whose git directory borrows another's, gets no git: its
// files are listed by walking it, and the git tools say why they are off.
func TestForeignGitDirRefused(t *testing.T) {
	elsewhere := gitexectest.NewRepo(t) // commits the checkout must not show
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, dir string)
	}{
		{"gitdir file", func(t *testing.T, dir string) {
			wsWriteFiles(t, dir, map[string]string{".git": "gitdir: " + filepath.Join(elsewhere, ".git") + "\n"})
		}},
		{"relative gitdir file", func(t *testing.T, dir string) {
			rel, err := filepath.Rel(dir, filepath.Join(elsewhere, ".git"))
			if err != nil {
				t.Fatal(err)
			}
			wsWriteFiles(t, dir, map[string]string{".git": "gitdir: " + rel + "\n"})
		}},
		{".git symlink", func(t *testing.T, dir string) {
			if err := os.Symlink(filepath.Join(elsewhere, ".git"), filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
		}},
		{"commondir", func(t *testing.T, dir string) {
			wsGit(t, dir, "init", "-q")
			wsWriteFiles(t, dir, map[string]string{".git/commondir": filepath.Join(elsewhere, ".git") + "\n"})
		}},
		{"alternates", func(t *testing.T, dir string) {
			wsGit(t, dir, "init", "-q")
			wsWriteFiles(t, dir, map[string]string{".git/objects/info/alternates": filepath.Join(elsewhere, ".git", "objects") + "\n"})
			head := strings.TrimSpace(string(must(gitOut(t, elsewhere, "rev-parse", "HEAD"))))
			wsWriteFiles(t, dir, map[string]string{".git/HEAD": head + "\n"})
		}},
		{"objects symlink", func(t *testing.T, dir string) {
			wsGit(t, dir, "init", "-q")
			if err := os.RemoveAll(filepath.Join(dir, ".git", "objects")); err != nil {
				t.Fatal(err)
			}
			wsSymlink(t, filepath.Join(elsewhere, ".git", "objects"), filepath.Join(dir, ".git", "objects"))
			head := strings.TrimSpace(string(must(gitOut(t, elsewhere, "rev-parse", "HEAD"))))
			wsWriteFiles(t, dir, map[string]string{".git/HEAD": head + "\n"})
		}},
		{"pack directory symlink", func(t *testing.T, dir string) {
			gitexectest.Git(t, elsewhere, "gc", "-q")
			wsGit(t, dir, "init", "-q")
			if err := os.RemoveAll(filepath.Join(dir, ".git", "objects", "pack")); err != nil {
				t.Fatal(err)
			}
			wsSymlink(t, filepath.Join(elsewhere, ".git", "objects", "pack"), filepath.Join(dir, ".git", "objects", "pack"))
			head := strings.TrimSpace(string(must(gitOut(t, elsewhere, "rev-parse", "HEAD"))))
			wsWriteFiles(t, dir, map[string]string{".git/HEAD": head + "\n"})
		}},
		{"core.worktree elsewhere", func(t *testing.T, dir string) {
			wsGit(t, dir, "init", "-q")
			wsGit(t, dir, "config", "core.worktree", elsewhere)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			wsWriteFiles(t, dir, map[string]string{"mine.txt": "mine\n", "ignored.log": "x\n", ".gitignore": "*.log\n"})
			c.plant(t, dir)
			ws := wsNew(t, dir, WorkspaceOptions{})
			_, gerr := ws.Git(t.Context())
			if !errors.Is(gerr, ErrForeignGitDir) {
				t.Fatalf("Git() error = %v, want ErrForeignGitDir", gerr)
			}
			if strings.Contains(gerr.Error(), elsewhere) || strings.Contains(gerr.Error(), dir) {
				t.Errorf("error names a host path: %v", gerr)
			}
			files, err := ws.Files(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			// Walked, not listed by git: the other repository's files
			// are absent and .gitignore has no say.
			if slices.Contains(files, "main.go") || !slices.Contains(files, "ignored.log") {
				t.Errorf("Files = %v, want the checkout walked", files)
			}
			_, err = NewGitLog(ws, Options{}).Run(t.Context(), json.RawMessage(`{}`))
			if !errors.Is(err, ErrForeignGitDir) || !strings.Contains(err.Error(), "git history is off for this checkout") {
				t.Errorf("git_log error = %v, want the refusal", err)
			}
		})
	}
}

// The objects of a checkout's repository are checked again on every call,
// as its .git is: an alternates file or a borrowed pack directory planted
// after the first call turns git off rather than show another
// repository.
func TestObjectsBorrowedLaterRefused(t *testing.T) {
	elsewhere := gitexectest.NewRepo(t)
	gitexectest.Git(t, elsewhere, "gc", "-q")
	head := strings.TrimSpace(string(must(gitOut(t, elsewhere, "rev-parse", "HEAD"))))
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, dir string)
	}{
		{"alternates", func(t *testing.T, dir string) {
			wsWriteFiles(t, dir, map[string]string{".git/objects/info/alternates": filepath.Join(elsewhere, ".git", "objects") + "\n"})
		}},
		{"pack directory symlink", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, ".git", "objects", "pack")); err != nil {
				t.Fatal(err)
			}
			wsSymlink(t, filepath.Join(elsewhere, ".git", "objects", "pack"), filepath.Join(dir, ".git", "objects", "pack"))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			wsWriteFiles(t, dir, map[string]string{"mine.txt": "mine\n"})
			wsGit(t, dir, "init", "-q")
			wsGit(t, dir, "add", ".")
			wsGit(t, dir, "commit", "-q", "-m", "mine")
			ws := wsNew(t, dir, WorkspaceOptions{})
			gitLog := NewGitLog(ws, Options{})
			if out, err := runText(t.Context(), gitLog, json.RawMessage(`{}`)); err != nil || !strings.Contains(out, "mine") {
				t.Fatalf("git_log before = %q, %v", out, err)
			}
			c.plant(t, dir)
			wsWriteFiles(t, dir, map[string]string{".git/HEAD": head + "\n"})
			out, err := runText(t.Context(), gitLog, json.RawMessage(`{}`))
			if !errors.Is(err, ErrForeignGitDir) {
				t.Errorf("git_log after = %q, %v; want ErrForeignGitDir", out, err)
			}
		})
	}
}

// A checkout below the top of its repository is legitimate: the git
// directory is the repository's own, above the checkout.
func TestSubdirCheckoutKeepsGit(t *testing.T) {
	repo := gitexectest.NewRepo(t)
	ws := wsNew(t, filepath.Join(repo, "docs"), WorkspaceOptions{})
	g, err := ws.Git(t.Context())
	if err != nil {
		t.Fatalf("Git() = %v", err)
	}
	if g.GitDir != filepath.Join(repo, ".git") || g.WorkTree != repo {
		t.Errorf("git dir, work tree = %s, %s; want %s/.git, %s", g.GitDir, g.WorkTree, repo, repo)
	}
	files, err := ws.Files(t.Context())
	if err != nil || !slices.Equal(files, []string{"guide.txt"}) {
		t.Errorf("Files = %v, %v; want [guide.txt]", files, err)
	}
	out, err := runText(t.Context(), NewGitLog(ws, Options{}), json.RawMessage(`{}`))
	if err != nil || !strings.Contains(out, "first") {
		t.Errorf("git_log = %q, %v", out, err)
	}
}

func gitOut(t testing.TB, dir string, args ...string) ([]byte, error) {
	t.Helper()
	return []byte(gitexectest.Git(t, dir, args...)), nil
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// The runner a checkout hands out has the repository's drivers switched
// off, so even a command that would run one (a patch with textconv, a
// diff against the working tree) runs none.
func TestWorkspaceGitSwitchesDriversOff(t *testing.T) {
	h := gitexectest.NewHostile(t)
	ws := wsNew(t, h.Dir, WorkspaceOptions{})
	g, err := ws.Git(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wsWriteFiles(t, h.Dir, map[string]string{"README.md": "changed\n"})
	for _, args := range [][]string{{"log", "-p", "--no-ext-diff"}, {"diff", "--no-ext-diff", "--stat"}} {
		_ = g.Command(t.Context(), args...).Run()
		h.Check(t, "git "+strings.Join(args, " ")+" through Workspace.Git")
	}
}

// A .git directory swapped for a .git file after the checkout was opened
// turns git off from the next call on; it does not redirect the tools.
func TestGitDirSwappedAfterOpen(t *testing.T) {
	elsewhere := gitexectest.NewRepo(t)
	dir := gitexectest.NewRepo(t)
	ws := wsNew(t, dir, WorkspaceOptions{})
	if _, err := ws.Git(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	wsWriteFiles(t, dir, map[string]string{".git": "gitdir: " + filepath.Join(elsewhere, ".git") + "\n"})
	out, err := runText(t.Context(), NewGitLog(ws, Options{}), json.RawMessage(`{}`))
	if !errors.Is(err, ErrForeignGitDir) {
		t.Errorf("git_log after the swap = %q, %v; want ErrForeignGitDir", out, err)
	}
}
