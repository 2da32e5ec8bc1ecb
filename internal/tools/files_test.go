//go:build unix

package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// filesGit runs git in dir with stdin and returns its trimmed output.
func filesGit(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestFilesGitIndexStates covers index entries whose name alone does not
// say whether a file is on disk: the listing comes from one git call with
// no stat per file, so each of these relies on what git reports.
func TestFilesGitIndexStates(t *testing.T) {
	dir := wsGitDir(t, map[string]string{
		"kept.go":         "package main\n",
		"deleted.go":      "package main\n",
		"sparse-gone.txt": "skip-worktree, removed from disk\n",
		"sparse-here.txt": "skip-worktree, still on disk\n",
		"conflict.txt":    "base\n",
		"tab\tname.txt":   "a tab in the name\n",
		"new\nline.txt":   "a newline in the name\n",
		"sub/.env":        "SECRET=1\n",
	})
	wsSymlink(t, "kept.go", filepath.Join(dir, "link.go"))
	wsGit(t, dir, "add", "-f", ".")
	wsGit(t, dir, "commit", "-q", "-m", "init")

	// A submodule is a gitlink in the index and a directory on disk.
	head := filesGit(t, dir, "", "rev-parse", "HEAD")
	wsGit(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+head+",module")
	if err := os.Mkdir(filepath.Join(dir, "module"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Three stages of an unresolved merge, and a deleted conflicted file.
	blob := filesGit(t, dir, "", "hash-object", "-w", "conflict.txt")
	wsGit(t, dir, "rm", "-q", "--cached", "conflict.txt")
	var stages strings.Builder
	for _, name := range []string{"conflict.txt", "conflict-gone.txt"} {
		for stage := 1; stage <= 3; stage++ {
			stages.WriteString("100644 " + blob + " " + string(rune('0'+stage)) + "\t" + name + "\n")
		}
	}
	filesGit(t, dir, stages.String(), "update-index", "--index-info")
	wsGit(t, dir, "update-index", "--skip-worktree", "sparse-gone.txt", "sparse-here.txt")
	for _, name := range []string{"deleted.go", "sparse-gone.txt"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	wsWriteFiles(t, dir, map[string]string{"untracked.go": "package main\n"})

	got, err := wsNew(t, dir, WorkspaceOptions{FilesTTL: -1}).Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"conflict.txt", "kept.go", "link.go", "new\nline.txt", "sparse-here.txt", "tab\tname.txt", "untracked.go"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files() mismatch (-want +got):\n%s", diff)
	}
}

func TestParseLsFilesRejectsUnknownOutput(t *testing.T) {
	for _, out := range []string{"garbage\x00", "H 100644 abc 0 no-tab\x00", "? untracked\x00", "HH 100644 abc 0\tx\x00"} {
		if _, err := parseLsFiles(out, t.TempDir()); err == nil {
			t.Errorf("parseLsFiles(%q) accepted it", out)
		}
	}
}
