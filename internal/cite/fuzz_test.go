package cite

import (
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/mdscan"
)

// FuzzFindRewrite holds Find's and Rewrite's promises on any input: every
// citation's Raw is at its Offset, fenced code comes out byte for byte, and
// a second pass changes nothing.
func FuzzFindRewrite(f *testing.F) {
	for _, s := range []string{
		"See internal/a.go:3 and `x/y.go:1-2`.",
		"```\na/b.go:1\n```\n`a/b.go` lines 3-4",
		"[a/b.go:9](http://x) ~~_c/d.go:2_~~ http://h:80/a.go:1",
		"| a | b |\n|---|---|\n| `a/b.go:1` | c/d.go:99 |",
		"a/b.go:5-2, ../x.go:1, `net/http`, C:\\x.go:1, e.go:12:5:",
		"\\`a/b.go:1\\` `` `a/b.go:2` `` a/b.go#L3-L9 a/b.go:L1–L2",
		"[a/b.go](https://evil.example) ![x/y.go:2](p.png) \\![e.go:1](x) [`a/b.go:9`](<y> \"t\") [a/\\_b.go:1](z)",
	} {
		f.Add(s)
	}
	c := &countingChecker{files: map[string]int{"a/b.go": 5, "x/y.go": 3, "e.go": 20}}
	web := &Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}
	f.Fuzz(func(t *testing.T, md string) {
		cs := Find(md)
		for _, ci := range cs {
			if ci.Offset < 0 || ci.Offset+len(ci.Raw) > len(md) || md[ci.Offset:ci.Offset+len(ci.Raw)] != ci.Raw {
				t.Fatalf("citation %+v is not at its offset", ci)
			}
		}
		once := Rewrite(md, Check(t.Context(), cs, c, web, sha))
		twice := Rewrite(once, Check(t.Context(), Find(once), c, web, sha))
		if once != twice {
			t.Fatalf("not idempotent:\n%q\n%q\n%q", md, once, twice)
		}
		if fencedText(md) != fencedText(once) {
			t.Fatalf("fenced code changed:\n%q\n%q", md, once)
		}
	})
}

// fencedText is the text of md's fenced code blocks, fences included.
func fencedText(md string) string {
	var b strings.Builder
	for _, l := range mdscan.Lines(md) {
		if l.Fenced {
			b.WriteString(l.Text)
		}
	}
	return b.String()
}
