package cite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// BenchmarkCheckRewrite measures a realistic answer: 30 citations over 20
// files of a real git repository (a few hallucinated or out of range),
// found, checked with one git process, and rewritten.
func BenchmarkCheckRewrite(b *testing.B) {
	repo := gitexectest.Init(b, "")
	for i := range 20 {
		writeFile(b, repo.Dir, fmt.Sprintf("internal/pkg%d/file%d.go", i%5, i), lines(200+i*50))
	}
	repo.Commit(gitexectest.Commit{Message: "files"})
	dir := repo.Dir
	g, err := NewGitChecker(b.Context(), dir, "main")
	if err != nil {
		b.Fatal(err)
	}
	web := &Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}
	var md strings.Builder
	md.WriteString("## Answer\n\nThe flow goes through these places:\n\n")
	for i := range 30 {
		f := i % 22 // 20 real files and 2 hallucinated ones
		switch {
		case i%7 == 0:
			fmt.Fprintf(&md, "- `internal/pkg%d/file%d.go:%d-%d` handles step %d;\n", f%5, f, 10+i, 20+i, i)
		case i%11 == 0:
			fmt.Fprintf(&md, "- step %d is at internal/pkg%d/file%d.go:%d.\n", i, f%5, f, 5000)
		default:
			fmt.Fprintf(&md, "- step %d is at internal/pkg%d/file%d.go:%d (see **`internal/pkg%d/file%d.go`**).\n", i, f%5, f, 3+i, f%5, f)
		}
	}
	md.WriteString("\n```go\nfunc main() {} // internal/pkg0/file0.go:1\n```\n")
	in := md.String()
	if n := len(Find(in)); n < 30 {
		b.Fatalf("the answer has %d citations, want at least 30", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		results := Check(b.Context(), Find(in), g, web, g.Commit())
		if out := Rewrite(in, results); len(out) <= len(in) {
			b.Fatal("nothing was rewritten")
		}
	}
}

// BenchmarkFind measures finding citations alone, the part that runs on
// every answer even without a checkout.
func BenchmarkFind(b *testing.B) {
	in := strings.Repeat("The retry loop (internal/retry/retry.go:40-80) calls `Client.Do` at 10:30 via https://example.com:8443/x and `internal/retry/backoff.go`.\n", 30)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		Find(in)
	}
}
