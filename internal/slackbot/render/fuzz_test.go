package render

import (
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/mdscan"
)

// FuzzCodeAgreement holds the promise that the citation checker and the
// renderer agree on what is code, for any Markdown. Code is what the
// shared scanner reads as code: the lines of fenced blocks, and outside
// them the code spans of an inline scan that takes escapes and autolinks
// whole and reads a link's text but not its destination (codeRanges).
// Then:
//
//   - cite.Find reports no citation that overlaps code unless it holds
//     the whole of it (a citation that is a code span, or a link whose
//     text is one), so Rewrite never changes a byte inside code; and
//   - showLinkHosts keeps every fenced line and every code span as
//     written, so no host note lands in what Slack shows as code (a note
//     may be code of its own: an unparsable destination shows as a
//     span), and it notes the host after every link outside code that
//     leaves the home, so none hides in text it took for code.
//
// The one exception is the backslash showLinkHosts puts before the
// bracket of a link reference definition, which CommonMark reads before
// code spans; such lines are left out of the second check.
func FuzzCodeAgreement(f *testing.F) {
	for _, s := range []string{
		"See internal/a.go:3 and `x/y.go:1-2`.",
		"```go\na/b.go:1 [d](https://evil.example)\n```\n`a/b.go` lines 3-4",
		"``a ``` b/c.go:1`` d/e.go:2 `` `x` ``",
		"<https://x.y/`> [d](https://evil.example) a/b.go:1 `",
		"[`](u) a/b.go:1 [d](https://evil.example) `",
		"[`a/b.go:1`](https://evil.example) [a `]` b](https://evil.example/x) c/d.go:4",
		`[d](https://evil.example/a\)b) \` + "`a/b.go:1` \\\\`c/d.go:2`",
		" ⚠️ _([`)_ a/b.go:1 `](u) ⚠️ _(not in repo)_ c/d.go:1",
		"   ~~~\n   a/b.go:1 `\n   ~~~~\n`x` a/b.go:2",
		"| `a/b.go:1` | [x](https://evil.example) |\n|---|---|\n| c/d.go:2 | `e` |",
		"[r\n`a]: b` a/b.go:1\n[l]: https://evil.example",
		"see http://h.example/a`x/y.go:1` and http://h.example/b`c/d.go:2",
	} {
		f.Add(s)
	}
	home := []string{"https://github.com/acme/app"}
	f.Fuzz(func(t *testing.T, md string) {
		code := codeRanges(md)
		for _, c := range cite.Find(md) {
			start, end := c.Offset, c.Offset+len(c.Raw)
			for _, r := range code {
				if start < r[1] && r[0] < end && (r[0] < start || end < r[1]) {
					t.Fatalf("citation %q at %d cuts into code %q at %d in %q", c.Raw, start, md[r[0]:r[1]], r[0], md)
				}
			}
		}
		in, out := mdscan.Lines(md), mdscan.Lines(showLinkHosts(md, home))
		if len(in) != len(out) {
			t.Fatalf("showLinkHosts made %d lines of %d in %q", len(out), len(in), md)
		}
		for i, l := range in {
			switch {
			case l.Fenced != out[i].Fenced || l.Fenced && l.Text != out[i].Text:
				t.Fatalf("fenced line %q came out as %q", l.Text, out[i].Text)
			case l.Fenced || refDefRE().MatchString(l.Body) || labelEndRE().MatchString(l.Body):
			case !subsequence(codeTexts(l.Body), codeTexts(out[i].Body)):
				t.Fatalf("code in %q is %q, came out of %q as %q", l.Body, codeTexts(l.Body), out[i].Body, codeTexts(out[i].Body))
			default:
				for _, raw := range foreignLinks(l.Body, home) {
					if !strings.Contains(out[i].Body, raw) {
						t.Fatalf("link %q in %q came out without its host: %q", raw, l.Body, out[i].Body)
					}
				}
			}
		}
	})
}

// codeRanges is where md is code, as byte ranges in order.
func codeRanges(md string) [][2]int {
	var out [][2]int
	for _, l := range mdscan.Lines(md) {
		if l.Fenced {
			out = append(out, [2]int{l.Offset, l.Offset + len(l.Text)})
			continue
		}
		out = inlineCode(out, l.Body, l.Offset)
	}
	return out
}

// inlineCode adds the code spans of one line (or a link's text) at base.
func inlineCode(out [][2]int, s string, base int) [][2]int {
	walkInline(s, func(i, end int) { out = append(out, [2]int{base + i, base + end}) }, func(i int, text, _ string, _ int) {
		out = inlineCode(out, text, base+i+1)
	})
	return out
}

// foreignLinks is each link of a line, outside code and with no link in
// its text, that leaves the home, as showLinkHosts should write it: the
// link and its host note.
func foreignLinks(s string, home []string) []string {
	var raws []string
	walkInline(s, func(int, int) {}, func(i int, text, dest string, n int) {
		if host, show := linkHost(text, dest, parseHomes(home)); show && !strings.Contains(text, "[") {
			raws = append(raws, s[i:i+n]+" ("+host+")")
		}
	})
	return raws
}

// walkInline reads a line as the shared scanner does, calling code for
// each code span and link for each link (whose text it does not read).
func walkInline(s string, code func(i, end int), link func(i int, text, dest string, n int)) {
	in := mdscan.NewInline(s)
	for i := 0; i < len(s); {
		switch k, end := in.At(i); {
		case k == mdscan.Code:
			code(i, end)
			i = end
		case k != mdscan.Text:
			i = end
		case s[i] == '[':
			text, dest, n, ok := in.Link(i, len(s))
			if !ok {
				i++
				continue
			}
			link(i, text, dest, n)
			i += n
		default:
			i++
		}
	}
}

// codeTexts is the text of each code span in a line, in order.
func codeTexts(s string) []string {
	var texts []string
	for _, r := range inlineCode(nil, s, 0) {
		texts = append(texts, s[r[0]:r[1]])
	}
	return texts
}

// subsequence reports whether every text of want is in got, in order.
func subsequence(want, got []string) bool {
	for _, w := range want {
		for len(got) > 0 && got[0] != w {
			got = got[1:]
		}
		if len(got) == 0 {
			return false
		}
		got = got[1:]
	}
	return true
}
