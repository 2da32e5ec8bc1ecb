package tools

import (
	"fmt"
	"strings"
	"testing"
)

// longHistory writes a repository of commits commits over a tree of about
// 3000 files in 100 directories, each commit changing three files and every
// fiftieth an .env, through git fast-import.
func longHistory(tb testing.TB, commits int) string {
	tb.Helper()
	dir := tb.TempDir()
	histGit(tb, dir, nil, "init", "-q")
	var b strings.Builder
	mark := 0
	blob := func(content string) int {
		mark++
		fmt.Fprintf(&b, "blob\nmark :%d\ndata %d\n%s\n", mark, len(content), content)
		return mark
	}
	for i := range commits {
		var files []string
		if i == 0 {
			for d := range 100 {
				for f := range 30 {
					files = append(files, fmt.Sprintf("pkg%03d/file%02d.go", d, f))
				}
			}
		} else {
			for k := range 3 {
				files = append(files, fmt.Sprintf("pkg%03d/file%02d.go", (i*7+k*13)%100, (i+k)%30))
			}
			if i%50 == 0 {
				files = append(files, fmt.Sprintf("svc%02d/.env", i%20))
			}
		}
		marks := make([]int, len(files))
		for j, f := range files {
			marks[j] = blob(fmt.Sprintf("package x\n// %s at %d\nvar V = %d\n", f, i, i*31+j))
		}
		fmt.Fprintf(&b, "commit refs/heads/main\ncommitter A <a@example.com> %d +0000\ndata 7\ncommit\n", 1700000000+i*60)
		for j, f := range files {
			fmt.Fprintf(&b, "M 100644 :%d %s\n", marks[j], f)
		}
		b.WriteString("\n")
	}
	histGitIn(tb, dir, b.String(), "fast-import", "--quiet")
	histGit(tb, dir, nil, "reset", "-q", "--hard", "main")
	return dir
}

// BenchmarkSecretBlobs measures building the set of secret blobs on a
// history of 3000 commits: the cost of the first git tool call, and of
// the first read after a fetch moves a ref.
func BenchmarkSecretBlobs(b *testing.B) {
	dir := longHistory(b, 3000)
	ws := wsNew(b, dir, WorkspaceOptions{})
	g := newGitCLI(ws, GitOptions{})
	for b.Loop() {
		set, err := g.collectSecrets(b.Context(), []string{"--all", "--reflog"}, "")
		if err != nil {
			b.Fatal(err)
		}
		if len(set.ids) != 59 {
			b.Fatalf("%d secret blobs, want 59", len(set.ids))
		}
	}
}
