//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// wsWriteFiles creates files (slash paths → contents) under dir.
func wsWriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	gitexectest.WriteFiles(t, dir, files)
}

func wsSymlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// wsGit runs a fixture's git command in dir (see gitexectest.Git).
func wsGit(t testing.TB, dir string, args ...string) {
	t.Helper()
	gitexectest.Git(t, dir, args...)
}

// wsGitDir is a new git work tree holding files, none of them committed.
func wsGitDir(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	wsGit(t, dir, "init", "-q")
	wsWriteFiles(t, dir, files)
	return dir
}

func wsNew(t testing.TB, dir string, opts WorkspaceOptions) *Workspace {
	t.Helper()
	w, err := NewWorkspace(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// confinementFixture lays out a checkout next to an outside directory and a
// sibling whose name starts with the checkout's, with links of every kind.
// Every file no path may open holds "SECRET".
func confinementFixture(t testing.TB) (parent, repo string) {
	t.Helper()
	parent = t.TempDir()
	repo = filepath.Join(parent, "repo")
	wsWriteFiles(t, parent, map[string]string{
		"outside/secret.txt":         "SECRET",
		"repo-secret/x.txt":          "SECRET",
		"repo/a.txt":                 "A",
		"repo/sub/b.txt":             "B",
		"repo/.env":                  "SECRET",
		"repo/sub/.env.local":        "SECRET",
		"repo/.env.example":          "TOKEN=",
		"repo/id_rsa":                "SECRET",
		"repo/.git/config":           "SECRET",
		"repo/x.pem":                 "SECRET",
		"repo/credentials-prod.json": "SECRET",
	})
	for link, target := range map[string]string{
		"link_out_file": "../outside/secret.txt",
		"link_out_dir":  "../outside",
		"link_abs":      "/etc/passwd",
		"devnull":       "/dev/null",
		"link_in":       "sub/b.txt",
		"link_sub":      "sub",
		"notes.txt":     ".env",
		"gitdir":        ".git",
		"sub/up":        "../a.txt",
		"loop1":         "loop2",
		"loop2":         "loop1",
	} {
		wsSymlink(t, target, filepath.Join(repo, link))
	}
	if err := syscall.Mkfifo(filepath.Join(repo, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return parent, repo
}

func TestWorkspaceOpenConfinement(t *testing.T) {
	parent, repo := confinementFixture(t)
	tests := []struct {
		name    string
		path    string
		want    string // content when the open succeeds
		wantErr error
	}{
		{"plain file", "a.txt", "A", nil},
		{"unclean path inside", "./sub/../a.txt", "A", nil},
		{"absolute inside", filepath.Join(repo, "sub/b.txt"), "B", nil},
		{"link inside", "link_in", "B", nil},
		{"through linked dir inside", "link_sub/b.txt", "B", nil},
		{"link climbing but staying inside", "sub/up", "A", nil},
		{"env example allowed", ".env.example", "TOKEN=", nil},
		{"dotdot", "../x", "", ErrOutside},
		{"dotdot to real file", "../outside/secret.txt", "", ErrOutside},
		{"dotdot after descent", "sub/../../outside/secret.txt", "", ErrOutside},
		{"absolute outside", "/etc/passwd", "", ErrOutside},
		{"sibling prefix dir", filepath.Join(parent, "repo-secret/x.txt"), "", ErrOutside},
		{"sibling prefix relative", "../repo-secret/x.txt", "", ErrOutside},
		{"link to outside file", "link_out_file", "", ErrOutside},
		{"link to outside dir then file", "link_out_dir/secret.txt", "", ErrOutside},
		{"absolute link", "link_abs", "", ErrOutside},
		{"dev null via symlink", "devnull", "", ErrOutside},
		{"fifo does not block", "fifo", "", ErrNotRegular},
		{"directory", "sub", "", ErrNotRegular},
		{"root", ".", "", ErrNotRegular},
		{"missing", "missing.txt", "", fs.ErrNotExist},
		{"dotenv", ".env", "", ErrDenied},
		{"nested dotenv variant", "sub/.env.local", "", ErrDenied},
		{"ssh key", "id_rsa", "", ErrDenied},
		{"git internals", ".git/config", "", ErrDenied},
		{"pem", "x.pem", "", ErrDenied},
		{"credentials json", "credentials-prod.json", "", ErrDenied},
		{"innocent name linking to dotenv", "notes.txt", "", ErrDenied},
		{"link to git dir", "gitdir/config", "", ErrDenied},
	}
	for _, mode := range []string{"proc", "resolve"} {
		w := wsNew(t, repo, WorkspaceOptions{})
		if mode == "resolve" {
			w.procFD = false // exercise the portable link-by-link path
		}
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				type result struct {
					content string
					err     error
				}
				done := make(chan result, 1)
				go func() {
					f, fi, err := w.Open(tt.path)
					if err != nil {
						done <- result{err: err}
						return
					}
					defer f.Close()
					if !fi.Mode().IsRegular() {
						done <- result{err: errors.New("Open returned a non-regular file")}
						return
					}
					b, err := io.ReadAll(f)
					done <- result{string(b), err}
				}()
				var r result
				select {
				case r = <-done:
				case <-time.After(5 * time.Second):
					t.Fatalf("Open(%q) blocked", tt.path)
				}
				if tt.wantErr != nil {
					if !errors.Is(r.err, tt.wantErr) {
						t.Fatalf("Open(%q) error = %v, want %v", tt.path, r.err, tt.wantErr)
					}
					if strings.Contains(r.content, "SECRET") {
						t.Fatalf("leaked %q", r.content)
					}
					return
				}
				if r.err != nil {
					t.Fatalf("Open(%q): %v", tt.path, r.err)
				}
				if r.content != tt.want {
					t.Errorf("Open(%q) read %q, want %q", tt.path, r.content, tt.want)
				}
			})
		}
	}
}

func TestWorkspaceRel(t *testing.T) {
	parent := t.TempDir()
	repo := filepath.Join(parent, "repo")
	wsWriteFiles(t, repo, map[string]string{"a.txt": ""})
	w := wsNew(t, repo, WorkspaceOptions{})
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"", ".", nil},
		{".", ".", nil},
		{"./", ".", nil},
		{"a.txt", "a.txt", nil},
		{"./src//x/../y.go", "src/y.go", nil},
		{repo, ".", nil},
		{repo + "/", ".", nil},
		{repo + "/src/y.go", "src/y.go", nil},
		{"..", "", ErrOutside},
		{"a/../../b", "", ErrOutside},
		{"/", "", ErrOutside},
		{"/etc/passwd", "", ErrOutside},
		{repo + "-secret/x", "", ErrOutside},
		{repo + "/../repo-secret/x", "", ErrOutside},
		{".env", "", ErrDenied},
		{"deep/er/.env.production", "", ErrDenied},
		{".env.example", ".env.example", nil},
		{".git", "", ErrDenied},
		{".github/workflows/ci.yml", ".github/workflows/ci.yml", nil},
		{".gitignore", ".gitignore", nil},
		{"keys/server.key", "", ErrDenied},
		{"id_ed25519.pub", "", ErrDenied},
		{"conf/.netrc", "", ErrDenied},
		{"credentials.json", "", ErrDenied},
		{"my-credentials.json", "my-credentials.json", nil},
	}
	for _, tt := range tests {
		got, err := w.Rel(tt.in)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Rel(%q) = %q, %v; want error %v", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Rel(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestWorkspaceDenyOptions(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		opts   WorkspaceOptions
		path   string
		denied bool
	}{
		{"default", WorkspaceOptions{}, "a/b/server.pem", true},
		{"extra pattern by name", WorkspaceOptions{Deny: []string{"*.sqlite"}}, "data/app.sqlite", true},
		{"extra directory pattern", WorkspaceOptions{Deny: []string{"secrets/"}}, "deploy/secrets/db.yaml", true},
		{"anchored pattern matches from the root only", WorkspaceOptions{Deny: []string{"config/prod.yaml"}}, "x/config/prod.yaml", false},
		{"anchored pattern", WorkspaceOptions{Deny: []string{"config/prod.yaml"}}, "config/prod.yaml", true},
		{"negation re-allows a default", WorkspaceOptions{Deny: []string{"!testdata/*.pem"}}, "testdata/cert.pem", false},
		{"no defaults", WorkspaceOptions{NoDefaultDeny: true}, ".env", false},
		{"no defaults keeps extras", WorkspaceOptions{NoDefaultDeny: true, Deny: []string{".env"}}, ".env", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := wsNew(t, dir, tt.opts)
			if got := w.Denied(tt.path); got != tt.denied {
				t.Errorf("Denied(%q) = %v, want %v", tt.path, got, tt.denied)
			}
		})
	}
	if _, err := NewWorkspace(dir, WorkspaceOptions{Deny: []string{"[oops"}}); err == nil {
		t.Error("NewWorkspace accepted an invalid deny pattern")
	}
}

func TestNewWorkspaceErrors(t *testing.T) {
	dir := t.TempDir()
	wsWriteFiles(t, dir, map[string]string{"file": "x"})
	for _, p := range []string{"", filepath.Join(dir, "missing"), filepath.Join(dir, "file")} {
		if w, err := NewWorkspace(p, WorkspaceOptions{}); err == nil {
			w.Close()
			t.Errorf("NewWorkspace(%q) succeeded", p)
		}
	}
	w := wsNew(t, dir+"/./", WorkspaceOptions{})
	if w.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", w.Dir(), dir)
	}
}

// gitFixture builds a repository exercising the ignore rules git applies.
func gitFixture(t *testing.T) string {
	dir := wsGitDir(t, map[string]string{
		".gitignore":       "*.log\n!keep.log\nbuild/\n/rootonly.txt\n",
		"main.go":          "package main\n",
		"keep.log":         "kept by negation\n",
		"debug.log":        "ignored\n",
		"build/out.bin":    "ignored dir\n",
		"rootonly.txt":     "ignored at the root\n",
		"sub/rootonly.txt": "not ignored below\n",
		"sub/.gitignore":   "*.tmp\n",
		"sub/x.tmp":        "ignored by nested rule\n",
		"sub/y.go":         "package sub\n",
		"local.txt":        "excluded by info/exclude\n",
		"forced.log":       "tracked although ignored\n",
		"deleted.txt":      "tracked then removed\n",
		".env":             "SECRET=1\n",
		"docs/readme.md":   "# docs\n",
	})
	wsWriteFiles(t, dir, map[string]string{".git/info/exclude": "local.txt\n"})
	wsGit(t, dir, "add", ".")
	wsGit(t, dir, "add", "-f", "forced.log")
	wsGit(t, dir, "commit", "-q", "-m", "init")
	if err := os.Remove(filepath.Join(dir, "deleted.txt")); err != nil {
		t.Fatal(err)
	}
	wsWriteFiles(t, dir, map[string]string{"untracked.go": "package main\n"})
	wsSymlink(t, "sub", filepath.Join(dir, "linkdir"))
	return dir
}

func TestFilesGit(t *testing.T) {
	dir := gitFixture(t)
	w := wsNew(t, dir, WorkspaceOptions{})
	got, err := w.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		".gitignore", "docs/readme.md", "forced.log", "keep.log", "linkdir", "main.go",
		"sub/.gitignore", "sub/rootonly.txt", "sub/y.go", "untracked.go",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files() mismatch (-want +got):\n%s", diff)
	}

	t.Run("subdirectory of a repository", func(t *testing.T) {
		w := wsNew(t, filepath.Join(dir, "sub"), WorkspaceOptions{})
		got, err := w.Files(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{".gitignore", "rootonly.txt", "y.go"}, got); diff != "" {
			t.Errorf("Files() mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestFilesWalkWithoutGit(t *testing.T) {
	dir := t.TempDir()
	wsWriteFiles(t, dir, map[string]string{
		"main.go":                 "",
		"node_modules/x/index.js": "",
		"vendor/a/a.go":           "",
		"__pycache__/m.pyc":       "",
		"src/app.py":              "",
		"src/.venv/lib.py":        "",
		".git/HEAD":               "",
		"keys/deploy.key":         "",
		"real/inner.txt":          "",
	})
	wsSymlink(t, "real", filepath.Join(dir, "linked"))
	// Stop git from finding a repository above the temporary directory.
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	w := wsNew(t, dir, WorkspaceOptions{})
	got, err := w.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"linked", "main.go", "real/inner.txt", "src/app.py"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files() mismatch (-want +got):\n%s", diff)
	}
}

func TestFilesCache(t *testing.T) {
	dir := gitFixture(t)
	w := wsNew(t, dir, WorkspaceOptions{FilesTTL: time.Hour})
	first, err := w.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wsWriteFiles(t, dir, map[string]string{"later.go": "package main\n"})
	cached, _ := w.Files(t.Context())
	if diff := cmp.Diff(first, cached); diff != "" {
		t.Errorf("an unchanged index should reuse the list (-first +second):\n%s", diff)
	}
	// Adding to the index rewrites it, which invalidates the cache.
	time.Sleep(10 * time.Millisecond)
	wsGit(t, dir, "add", "later.go")
	fresh, _ := w.Files(t.Context())
	if len(fresh) != len(first)+1 {
		t.Errorf("after git add: %d files, want %d", len(fresh), len(first)+1)
	}

	noCache := wsNew(t, dir, WorkspaceOptions{FilesTTL: -1})
	noCache.Files(t.Context())
	wsWriteFiles(t, dir, map[string]string{"even-later.go": ""})
	got, _ := noCache.Files(t.Context())
	if len(got) != len(fresh)+1 {
		t.Errorf("with caching off: %d files, want %d", len(got), len(fresh)+1)
	}
}

func TestFilesCanceled(t *testing.T) {
	dir := gitFixture(t)
	w := wsNew(t, dir, WorkspaceOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.Files(ctx); err == nil {
		t.Error("Files with a canceled context succeeded")
	}
}

func TestReadFileFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewReadFile(wsNew(t, dir, WorkspaceOptions{}), Options{}).Run(t.Context(), json.RawMessage(`{"path":"pipe"}`))
	if err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("error = %v, want a named pipe refusal", err)
	}
}
