//go:build unix

package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// TestDiffersFromHead: every way a checkout's files can differ from its
// commit, as git status would show it, and the ways that are not a
// difference (an ignored file, a file touched with the same bytes).
func TestDiffersFromHead(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string)
		want   bool
	}{
		{"clean", func(*testing.T, string) {}, false},
		{"tracked file changed", func(t *testing.T, dir string) {
			wsWriteFiles(t, dir, map[string]string{"a.go": "package a // edited\n"})
		}, true},
		{"tracked file deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"untracked file", func(t *testing.T, dir string) {
			wsWriteFiles(t, dir, map[string]string{"sub/new.go": "package sub\n"})
		}, true},
		{"ignored file", func(t *testing.T, dir string) {
			wsWriteFiles(t, dir, map[string]string{"build.log": "noise\n"})
		}, false},
		{"touched, same bytes", func(t *testing.T, dir string) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(filepath.Join(dir, "a.go"), later, later); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"rewritten, same bytes", func(t *testing.T, dir string) {
			wsWriteFiles(t, dir, map[string]string{"a.go": "package a\n"})
		}, false},
		// Staged and not committed: the working tree matches git's index,
		// which no longer matches HEAD.
		{"change staged", func(t *testing.T, dir string) {
			wsWriteFiles(t, dir, map[string]string{"a.go": "package a // staged\n"})
			wsGit(t, dir, "add", "a.go")
		}, true},
		{"file staged for removal, still on disk", func(t *testing.T, dir string) {
			wsGit(t, dir, "rm", "-q", "--cached", "b.txt")
			wsWriteFiles(t, dir, map[string]string{".gitignore": "*.log\nb.txt\n"})
			wsGit(t, dir, "add", ".gitignore")
		}, true},
		// The bits a checkout's owner sets to make git skip a file: the
		// files on disk are what a search reads, whatever git says.
		{"assume-unchanged file changed", func(t *testing.T, dir string) {
			wsGit(t, dir, "update-index", "--assume-unchanged", "a.go")
			wsWriteFiles(t, dir, map[string]string{"a.go": "package a // hidden edit\n"})
		}, true},
		{"skip-worktree file changed", func(t *testing.T, dir string) {
			wsGit(t, dir, "update-index", "--skip-worktree", "a.go")
			wsWriteFiles(t, dir, map[string]string{"a.go": "package a // hidden edit\n"})
		}, true},
		{"intent to add", func(t *testing.T, dir string) {
			wsWriteFiles(t, dir, map[string]string{"c.go": "package a\n"})
			wsGit(t, dir, "add", "-N", "c.go")
		}, true},
		{"unresolved merge", func(t *testing.T, dir string) {
			blob := filesGit(t, dir, "", "hash-object", "-w", "a.go")
			wsGit(t, dir, "rm", "-q", "--cached", "a.go")
			var stages strings.Builder
			for stage := 1; stage <= 3; stage++ {
				stages.WriteString("100644 " + blob + " " + string(rune('0'+stage)) + "\ta.go\n")
			}
			filesGit(t, dir, stages.String(), "update-index", "--index-info")
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, _ := committedDir(t, map[string]string{"a.go": "package a\n", "b.txt": "b\n", ".gitignore": "*.log\n"})
			// git's index was written in this same second: its entries
			// are racily clean, and a stat check alone would trust them.
			time.Sleep(10 * time.Millisecond)
			c.change(t, dir)
			ws := wsNew(t, dir, WorkspaceOptions{})
			if got := ws.DiffersFromHead(t.Context()); got != c.want {
				t.Errorf("DiffersFromHead() = %v, want %v (git status: %q)", got, c.want, filesGit(t, dir, "", "status", "--porcelain"))
			}
		})
	}
}

// TestDiffersFromHeadOutsideGit: a directory git does not track has no
// commit to match.
func TestDiffersFromHeadOutsideGit(t *testing.T) {
	ws := wsOf(t, map[string]string{"a.go": "package a\n"})
	if !ws.DiffersFromHead(t.Context()) {
		t.Error("DiffersFromHead() = false outside git, want true")
	}
}

// TestDiffersFromHeadListsAfresh: an edit made right after a listing
// counts, though Files would still reuse that listing.
func TestDiffersFromHeadListsAfresh(t *testing.T) {
	dir, _ := committedDir(t, map[string]string{"a.go": "package a\n"})
	ws := wsNew(t, dir, WorkspaceOptions{FilesTTL: time.Hour})
	if ws.DiffersFromHead(t.Context()) {
		t.Fatal("a clean checkout differs")
	}
	wsWriteFiles(t, dir, map[string]string{"new.go": "package a\n"})
	if got, _ := ws.Files(t.Context()); len(got) != 1 {
		t.Fatalf("Files() = %q; want the cached listing of one file", got)
	}
	if !ws.DiffersFromHead(t.Context()) {
		t.Error("DiffersFromHead() missed a file added after the last listing")
	}
	if got, _ := ws.Files(t.Context()); len(got) != 2 {
		t.Errorf("Files() = %q; want the fresh listing of two files", got)
	}
}

// TestListingRunsGitOnce: the check that a checkout matches its commit,
// the listing a search needs and the staged secret files come from one
// listing, not a git call each.
func TestListingRunsGitOnce(t *testing.T) {
	dir, _ := committedDir(t, map[string]string{"a.go": "package a\n", ".env": "TOKEN=1\n"})
	wsGit(t, dir, "mv", "-f", ".env", "notes.txt")
	wsGit(t, dir, "commit", "-q", "-m", "rename")
	calls := gitexectest.LogCalls(t)
	ws := wsNew(t, dir, WorkspaceOptions{})
	if ws.DiffersFromHead(t.Context()) {
		t.Fatal("a clean checkout differs")
	}
	if _, err := ws.Files(t.Context()); err != nil {
		t.Fatal(err)
	}
	set, err := ws.secretSet(t.Context())
	if err != nil || set.empty() {
		t.Fatalf("secret set = %v, %v; want the renamed .env's blob", set, err)
	}
	staged, err := ws.stagedSecrets(t.Context(), set)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := staged["notes.txt"]; !ok {
		t.Errorf("staged secrets = %v; want notes.txt, checked out from the .env blob", staged)
	}
	ran := calls()
	if n := gitexectest.Count(ran, "ls-files"); n != 2 {
		t.Errorf("%d ls-files calls, want 2 (tracked, untracked):\n%s", n, strings.Join(ran, "\n"))
	}
	if n := gitexectest.Count(ran, "status"); n != 0 {
		t.Errorf("git status ran %d times; want none", n)
	}
}

// TestOwnedWorktreeListing: a worktree the caller checked out itself is
// listed from git's index by one call, without the walk for untracked
// files, with the deny-list applied and the staged secret files read from
// the same records.
func TestOwnedWorktreeListing(t *testing.T) {
	dir, _ := committedDir(t, map[string]string{"a.go": "package a\n", ".env": "TOKEN=1\n", "sub/b.go": "package sub\n"})
	wsGit(t, dir, "mv", "-f", ".env", "notes.txt")
	wsGit(t, dir, "commit", "-q", "-m", "rename")
	wt := filepath.Join(t.TempDir(), "wt")
	wsGit(t, dir, "worktree", "add", "-q", "--detach", wt, "HEAD")
	gitDir := filesGit(t, wt, "", "rev-parse", "--path-format=absolute", "--git-dir")
	calls := gitexectest.LogCalls(t)
	ws := wsNew(t, wt, WorkspaceOptions{GitDir: gitDir, Owned: true})
	got, err := ws.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.go", "notes.txt", "sub/b.go"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Files() = %q, want %q", got, want)
	}
	set, err := ws.secretSet(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	staged, err := ws.stagedSecrets(t.Context(), set)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := staged["notes.txt"]; !ok {
		t.Errorf("staged secrets = %v; want notes.txt, checked out from the .env blob", staged)
	}
	ran := calls()
	if n := gitexectest.Count(ran, "ls-files"); n != 1 || gitexectest.Count(ran, "--others") != 0 {
		t.Errorf("want one ls-files and no walk for untracked files; git ran:\n%s", strings.Join(ran, "\n"))
	}
}

// TestWarmListsOnceForTheLease: a listing Warm started is the one a
// check against HEAD since then takes, and the one Files reuses; a check
// that must be fresher lists again. Close stops a listing under way.
func TestWarmListsOnceForTheLease(t *testing.T) {
	dir, head := committedDir(t, map[string]string{"a.go": "package a\n"})
	calls := gitexectest.LogCalls(t)
	ws := wsNew(t, dir, WorkspaceOptions{FilesTTL: time.Hour})
	since := time.Now()
	ws.Warm(t.Context(), true)
	if ws.DiffersFrom(t.Context(), head, since) {
		t.Fatal("a clean checkout differs")
	}
	if got, err := ws.Files(t.Context()); err != nil || len(got) != 1 {
		t.Fatalf("Files() = %q, %v", got, err)
	}
	if n := gitexectest.Count(calls(), "ls-files"); n != 2 {
		t.Fatalf("%d ls-files calls after Warm, a check and Files; want one listing (2)", n)
	}
	wsWriteFiles(t, dir, map[string]string{"b.go": "package a\n"})
	if !ws.DiffersFromHead(t.Context()) {
		t.Error("a check made after the warm listing took it, and missed a new file")
	}

	other := wsNew(t, dir, WorkspaceOptions{})
	other.Warm(t.Context(), true)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDiffersFromHeadStatSettings: the repository's config cannot make
// git trust a stat it would otherwise check. A file rewritten in place
// with the same size and its old mtime put back differs only in ctime,
// which core.trustctime=false (or core.checkStat=minimal) tells git to
// ignore; its content differs all the same.
func TestDiffersFromHeadStatSettings(t *testing.T) {
	for _, setting := range [][2]string{{"core.trustctime", "false"}, {"core.checkStat", "minimal"}} {
		t.Run(setting[0], func(t *testing.T) {
			dir := wsGitDir(t, map[string]string{"a.go": "package a\n"})
			// The file is older than git's index by over a second, so
			// git does not compare it as racily clean.
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(filepath.Join(dir, "a.go"), old, old); err != nil {
				t.Fatal(err)
			}
			wsGit(t, dir, "add", ".")
			wsGit(t, dir, "commit", "-q", "-m", "init")
			wsGit(t, dir, "config", setting[0], setting[1])
			// git keeps whole seconds of ctime: the rewrite must fall in
			// a later second than the add for ctime to tell.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
			f, err := os.OpenFile(filepath.Join(dir, "a.go"), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("package b\n"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := os.Chtimes(filepath.Join(dir, "a.go"), old, old); err != nil {
				t.Fatal(err)
			}
			ws := wsNew(t, dir, WorkspaceOptions{})
			if !ws.DiffersFromHead(t.Context()) {
				t.Error("DiffersFromHead() = false for a file rewritten with its mtime put back")
			}
		})
	}
}

// TestDiffersFromHeadAfterHeadMoved: a listing taken as fresh since a
// time answers for the commit HEAD was at then; once HEAD has moved
// (update-ref, reset --soft: neither the index nor the HEAD file change),
// the files are checked against the commit it is at now.
func TestDiffersFromHeadAfterHeadMoved(t *testing.T) {
	dir := t.TempDir()
	wsGit(t, dir, "init", "-q", "-b", "main")
	ids := histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "first", write: map[string]string{"a.go": "package a\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "second", write: map[string]string{"a.go": "package a // second\n"}},
	})
	first := ids["first"]
	ws := wsNew(t, dir, WorkspaceOptions{})
	since := time.Now()
	ws.Warm(t.Context(), true)
	if ws.DiffersFrom(t.Context(), ids["second"], since) {
		t.Fatal("a clean checkout differs")
	}
	wsGit(t, dir, "update-ref", "refs/heads/main", first)
	head, err := ws.GitHead(t.Context())
	if err != nil || head != first {
		t.Fatalf("GitHead() = %s, %v; want %s", head, err, first)
	}
	if !ws.DiffersFrom(t.Context(), first, since) {
		t.Error("DiffersFrom() = false: the files are the second commit's, HEAD is at the first")
	}
	if !ws.DiffersFrom(t.Context(), ids["second"], since) {
		t.Error("DiffersFrom(second) = false: HEAD is no longer at the commit asked about")
	}
}

// TestWarmWithoutHeadIsOnlyAListing: a listing warmed without the check
// against HEAD serves Files, and a check still lists for itself.
func TestWarmWithoutHeadIsOnlyAListing(t *testing.T) {
	dir, head := committedDir(t, map[string]string{"a.go": "package a\n"})
	calls := gitexectest.LogCalls(t)
	ws := wsNew(t, dir, WorkspaceOptions{FilesTTL: time.Hour})
	since := time.Now()
	ws.Warm(t.Context(), false)
	if got, err := ws.Files(t.Context()); err != nil || len(got) != 1 {
		t.Fatalf("Files() = %q, %v", got, err)
	}
	if n := gitexectest.Count(calls(), "diff-index"); n != 0 {
		t.Errorf("the warm listing compared git's index with HEAD %d times; want none", n)
	}
	if ws.DiffersFrom(t.Context(), head, since) {
		t.Fatal("a clean checkout differs")
	}
	if n, m := gitexectest.Count(calls(), "ls-files"), gitexectest.Count(calls(), "diff-index"); n != 4 || m != 1 {
		t.Errorf("%d ls-files, %d diff-index; want the check's own listing (4, 1)", n, m)
	}
}

// TestDiffersFromAnotherCommit: a clean checkout differs from any commit
// but the one HEAD is at, as a lease that read HEAD just before it moved
// must learn.
func TestDiffersFromAnotherCommit(t *testing.T) {
	dir, head := committedDir(t, map[string]string{"a.go": "package a\n"})
	ws := wsNew(t, dir, WorkspaceOptions{})
	if ws.DiffersFrom(t.Context(), head, time.Now()) {
		t.Error("a clean checkout differs from its HEAD")
	}
	if !ws.DiffersFrom(t.Context(), strings.Repeat("1", len(head)), time.Now()) {
		t.Error("a clean checkout does not differ from a commit HEAD is not at")
	}
}

// committedDir is a git work tree holding files, all of them committed
// (a denied name too), and the commit.
func committedDir(t *testing.T, files map[string]string) (dir, head string) {
	t.Helper()
	dir = wsGitDir(t, files)
	wsGit(t, dir, "add", "-f", ".")
	wsGit(t, dir, "commit", "-q", "-m", "init")
	return dir, filesGit(t, dir, "", "rev-parse", "HEAD")
}
