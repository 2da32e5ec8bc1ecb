package cite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// testRepo is a git repository in a temp dir with two commits: the second
// adds internal/b.go.
type testRepo struct {
	dir           string
	first, second string
}

// writeFile creates name (a slash path) under dir with content.
func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	gitexectest.WriteFiles(t, dir, map[string]string{name: content})
}

func lines(n int) string { return strings.Repeat("line\n", n) }

func newTestRepo(t testing.TB) testRepo {
	t.Helper()
	r := gitexectest.Init(t, "")
	r.Write(map[string]string{
		"internal/a.go":       lines(10),
		"README.md":           "one\ntwo", // no trailing newline
		"empty.txt":           "",
		"docs/my notes.md":    lines(3),
		"--output=x":          lines(1),
		"internal/_gen_/x.go": lines(4),
	})
	if err := os.Symlink("internal/a.go", filepath.Join(r.Dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(r.Dir, "out")); err != nil {
		t.Fatal(err)
	}
	first := r.Commit(gitexectest.Commit{Message: "first"})
	second := r.Commit(gitexectest.Commit{Message: "second", Write: map[string]string{"internal/b.go": lines(5)}})
	return testRepo{dir: r.Dir, first: first, second: second}
}

func TestGitChecker(t *testing.T) {
	repo := newTestRepo(t)
	// The working tree differs from both commits: the checker must not care.
	writeFile(t, repo.dir, "internal/a.go", lines(3))
	writeFile(t, repo.dir, "untracked.go", lines(3))

	type want struct {
		n   int
		err error
	}
	tests := []struct {
		rev  string
		path string
		want want
	}{
		{"first", "internal/a.go", want{10, nil}},
		{"first", "README.md", want{2, nil}},
		{"first", "empty.txt", want{0, nil}},
		{"first", "docs/my notes.md", want{3, nil}},
		{"first", "internal/b.go", want{0, fs.ErrNotExist}},
		{"second", "internal/b.go", want{5, nil}},
		{"first", "internal", want{0, ErrIsDir}},
		{"first", "link.go", want{10, nil}},
		{"first", "out", want{0, fs.ErrNotExist}},
		{"first", "internal/a.go/x", want{0, fs.ErrNotExist}},
		{"first", "untracked.go", want{0, fs.ErrNotExist}},
		{"first", "--output=x", want{1, nil}},
		{"first", "--output=y", want{0, fs.ErrNotExist}},
		{"first", "-h", want{0, fs.ErrNotExist}},
		{"first", "internal/a.go\nmain:README.md", want{0, ErrInvalidPath}},
		{"first", "/etc/passwd", want{0, ErrInvalidPath}},
		{"first", "", want{0, ErrInvalidPath}},
	}
	checkers := map[string]*GitChecker{}
	for name, rev := range map[string]string{"first": repo.first, "second": "main"} {
		g, err := NewGitChecker(t.Context(), repo.dir, rev)
		if err != nil {
			t.Fatal(err)
		}
		checkers[name] = g
	}
	if got := checkers["second"].Commit(); got != repo.second {
		t.Errorf("Commit() = %s, want main resolved to %s", got, repo.second)
	}
	for _, tt := range tests {
		t.Run(tt.rev+"/"+tt.path, func(t *testing.T) {
			n, err := checkers[tt.rev].Lines(t.Context(), tt.path)
			if n != tt.want.n || !errors.Is(err, tt.want.err) || (err != nil) != (tt.want.err != nil) {
				t.Errorf("Lines(%q) = %d, %v; want %d, %v", tt.path, n, err, tt.want.n, tt.want.err)
			}
		})
	}
	// One batch answers the same as one call per path, in order.
	var paths []string
	for _, tt := range tests {
		if tt.rev == "first" {
			paths = append(paths, tt.path)
		}
	}
	got := checkers["first"].LinesBatch(t.Context(), paths)
	k := 0
	for _, tt := range tests {
		if tt.rev != "first" {
			continue
		}
		if got[k].N != tt.want.n || !errors.Is(got[k].Err, tt.want.err) {
			t.Errorf("batch %q = %d, %v; want %d, %v", tt.path, got[k].N, got[k].Err, tt.want.n, tt.want.err)
		}
		k++
	}
	for _, name := range []string{"x", "y"} {
		if _, err := os.Stat(filepath.Join(repo.dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a path like --output=%s made git write a file: %v", name, err)
		}
	}
}

func TestNewGitCheckerRefusesBadRevisions(t *testing.T) {
	repo := newTestRepo(t)
	for _, rev := range []string{"", "--output=x", "-h", "nope", "main\nHEAD", repo.first + ":README.md"} {
		if g, err := NewGitChecker(t.Context(), repo.dir, rev); err == nil {
			t.Errorf("NewGitChecker(%q) = %s, want an error", rev, g.Commit())
		}
	}
	if _, err := os.Stat(filepath.Join(repo.dir, "x")); err == nil {
		t.Error("--output=x as a revision wrote a file")
	}
	if _, err := NewGitChecker(t.Context(), t.TempDir(), "HEAD"); err == nil || !strings.Contains(err.Error(), "not a commit") {
		t.Errorf("outside a repository: err = %v, want it to say the commit is not there", err)
	}
}

func TestGitCheckerIgnoresCallersGitEnvironment(t *testing.T) {
	repo := newTestRepo(t)
	other := newTestRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(other.dir, ".git"))
	g, err := NewGitChecker(t.Context(), repo.dir, repo.first)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := g.Lines(t.Context(), "internal/a.go"); err != nil || n != 10 {
		t.Errorf("Lines = %d, %v; want 10 from the checker's own repository", n, err)
	}
}

func TestGitCheckerCanceled(t *testing.T) {
	repo := newTestRepo(t)
	g, err := NewGitChecker(t.Context(), repo.dir, repo.first)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = g.Lines(ctx, "internal/a.go")
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("canceled lookup: err = %v, want a failure that is not 'missing'", err)
	}
}

// A repository whose config names a program for every key that can run
// one: checking citations runs none of them, whether git finds the
// repository itself or is given it.
func TestGitCheckerHostileRepository(t *testing.T) {
	h := gitexectest.NewHostile(t)
	for _, git := range []gitexec.Git{
		{Dir: h.Dir},
		{Dir: h.Dir, GitDir: filepath.Join(h.Dir, ".git"), WorkTree: h.Dir},
	} {
		g, err := NewGitCheckerFor(t.Context(), git, "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		got := g.LinesBatch(t.Context(), []string{"README.md", "main.go", "docs/guide.txt", "missing.txt"})
		if got[0].N != 4 || got[1].N != 4 || got[2].N != 2 || !errors.Is(got[3].Err, fs.ErrNotExist) {
			t.Errorf("LinesBatch = %+v", got)
		}
		h.Check(t, "checking citations")
	}
}

// NewGitCheckerFor says what git said when it cannot resolve the commit,
// so a broken repository reads as that and not as an unfetched commit.
func TestGitCheckerForSaysWhatGitSaid(t *testing.T) {
	_, err := NewGitCheckerFor(t.Context(), gitexec.Git{Dir: t.TempDir()}, "main")
	if err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("NewGitCheckerFor outside a repository = %v; want git's own words", err)
	}
}
