package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// benchGoTree returns a git repository holding a copy of $GOROOT/src
// (about 15k files), built once and kept in the temporary directory
// between runs because building it takes a while.
func benchGoTree(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	dir := filepath.Join(os.TempDir(), "askrepo-bench-gosrc-"+runtime.Version())
	if _, err := os.Stat(filepath.Join(dir, ".git", "index")); err == nil {
		return dir
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "askrepo-bench-build-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(runtime.GOROOT(), "src")
	if out, err := exec.Command("cp", "-R", src, filepath.Join(tmp, "src")).CombinedOutput(); err != nil {
		b.Fatalf("copy %s: %v\n%s", src, err, out)
	}
	repo := filepath.Join(tmp, "src")
	wsGit(b, repo, "init", "-q")
	wsGit(b, repo, "add", ".")
	wsGit(b, repo, "commit", "-q", "-m", "go source")
	if err := os.Rename(repo, dir); err != nil && !os.IsExist(err) {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkFiles measures the file index on the Go source tree: git
// ls-files without the cache, the cached answer, and the walker used
// without git.
func BenchmarkFiles(b *testing.B) {
	dir := benchGoTree(b)
	for _, mode := range []string{"git", "cached", "walk"} {
		b.Run(mode, func(b *testing.B) {
			opts := WorkspaceOptions{FilesTTL: -1}
			if mode == "cached" {
				opts.FilesTTL = 0
			}
			w := wsNew(b, dir, opts)
			if mode == "walk" {
				w.repo = &gitRepo{err: ErrNotGitRepo} // no git dir: walk
			}
			files, err := w.Files(b.Context())
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := w.Files(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(files)), "files")
		})
	}
}

// BenchmarkOpen measures one Open through the wall for a file four
// directories deep, with the /proc check and with link-by-link resolution.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	wsWriteFiles(b, dir, map[string]string{"a/b/c/d/file.go": "package d\n"})
	for _, mode := range []string{"proc", "resolve"} {
		b.Run(mode, func(b *testing.B) {
			w := wsNew(b, dir, WorkspaceOptions{})
			w.procFD = mode == "proc"
			for b.Loop() {
				f, _, err := w.Open("a/b/c/d/file.go")
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}

// BenchmarkReadFile reads pages of a 10 MB, 200k-line file; every call
// reads to the end to count the lines.
func BenchmarkReadFile(b *testing.B) {
	dir := b.TempDir()
	var sb strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&sb, "%06d %s\n", i, strings.Repeat("x", 45))
	}
	wsWriteFiles(b, dir, map[string]string{"big.txt": sb.String()})
	tool := NewReadFile(wsNew(b, dir, WorkspaceOptions{}), Options{})
	for _, offset := range []int{1, 100_000} {
		b.Run(fmt.Sprintf("offset=%d", offset), func(b *testing.B) {
			input := json.RawMessage(fmt.Sprintf(`{"path":"big.txt","offset":%d}`, offset))
			b.SetBytes(int64(sb.Len()))
			for b.Loop() {
				if _, err := tool.Run(b.Context(), input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
