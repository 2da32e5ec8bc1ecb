package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNeutralize(t *testing.T) {
	zw := zeroWidthSpace
	cases := []struct{ in, want string }{
		{"<!channel> hi", "<" + zw + "!channel> hi"},
		{"<!here|here>", "<" + zw + "!here|here>"},
		{"<!everyone>", "<" + zw + "!everyone>"},
		{"<!Channel>", "<" + zw + "!Channel>"},
		{"<!subteam^S012AB|@devs>", "<" + zw + "!subteam^S012AB|@devs>"},
		{"<@U123ABC> and <@W99>", "<" + zw + "@U123ABC> and <" + zw + "@W99>"},
		{"<#C0123|general>", "<" + zw + "#C0123|general>"},
		{"escaped &lt;!here&gt; form", "escaped &lt;" + zw + "!here&gt; form"},
		{"&#60;!channel&#62; &#x3C;!here&#x3E; &LT;!everyone&GT; &#0060;@U1ABC>", "&#60;" + zw + "!channel&#62; &#x3C;" + zw + "!here&#x3E; &LT;" + zw + "!everyone&GT; &#0060;" + zw + "@U1ABC>"},
		{"&#61;!here &#x3d;!here &#60 !here &amp;!here", "&#61;!here &#x3d;!here &#60 !here &amp;!here"},
		{"in code `<!channel>`", "in code `<" + zw + "!channel>`"},
		{"<!date^1700000000^{date}^https://evil.example|today>", "<" + zw + "!date^1700000000^{date}^https://evil.example|today>"},
		{"@here @Channel, (@everyone) `@here`", "@" + zw + "here @" + zw + "Channel, (@" + zw + "everyone) `@" + zw + "here`"},
		{"ops@here.example @heres @channels @here_x @hereé", "ops@here.example @heres @channels @here_x @hereé"},
		{"&#64;here &#x40;Channel &commat;everyone &#064;here.", "&#64;" + zw + "here &#x40;" + zw + "Channel &commat;" + zw + "everyone &#064;" + zw + "here."},
		{"ops&#64;here.example &#64;heres &#65;here", "ops&#64;here.example &#64;heres &#65;here"},
		// Ordinary text and code stay exactly as written.
		{"if a < b && c > d {}", "if a < b && c > d {}"},
		{"<div class=\"x\"><!-- note --></div>", "<div class=\"x\"><!-- note --></div>"},
		{"<!DOCTYPE html>", "<!DOCTYPE html>"},
		{"ch <- v; x := <-ch; func F[T any]() <-chan T", "ch <- v; x := <-ch; func F[T any]() <-chan T"},
		{"#include <stdio.h>; <#if> <@param>", "#include <stdio.h>; <#if> <@param>"},
		{"email <a@b.c>, <https://x.y>", "email <a@b.c>, <https://x.y>"},
	}
	for _, c := range cases {
		if got := Neutralize(c.in); got != c.want {
			t.Errorf("Neutralize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestToMrkdwn(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"bold", "a **bold** and __also__ word", "a *bold* and *also* word"},
		{"italic", "an *italic* and _this_ one", "an _italic_ and _this_ one"},
		{"bold inside italic order", "**bold** then *it*", "*bold* then _it_"},
		{"strike", "~~gone~~", "~gone~"},
		{"snake_case and stars kept", "call snake_case_name with 2 * 3 * 4", "call snake_case_name with 2 * 3 * 4"},
		{"link", "see [the docs](https://x.y/a?b=1&c=2)", "see <https://x.y/a?b=1&c=2|the docs>"},
		{"link with bold text", "[**Go**](https://go.dev)", "<https://go.dev|*Go*>"},
		{"link text equals url", "[https://go.dev](https://go.dev)", "<https://go.dev>"},
		{"link with title and parens", `[w](https://en.wikipedia.org/wiki/Go_(lang) "Go")`, "<https://en.wikipedia.org/wiki/Go_(lang)|w>"},
		{"relative link shows text", "open [retry.go](internal/retry.go)", "open retry.go"},
		{"javascript link shows text", "[click](javascript:alert(1))", "click"},
		{"image", "![diagram](https://x.y/d.png)", "<https://x.y/d.png|diagram>"},
		{"autolink", "<https://x.y/a>", "<https://x.y/a>"},
		{"not a link", "[a] (b) and [c]", "[a] (b) and [c]"},
		{"url with pipe and angle", "[t](https://x.y/a|b>c)", "<https://x.y/a%7Cb%3Ec|t>"},
		{"escaping", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"mention defused by escaping", "<!channel> <@U1>", "&lt;!channel&gt; &lt;@U1&gt;"},
		{"inline code kept and escaped", "use `a<b && **x**`", "use `a&lt;b &amp;&amp; **x**`"},
		{"double backtick code", "``a ` b``", "`a ` b`"},
		{"code closes on a run as long as it opened", "``a```b`` c", "`a```b` c"},
		{"escaped parenthesis in a link destination", `[t](https://x.y/a\)b) c`, `<https://x.y/a\)b|t> c`},
		{"code span over a link's bracket", "[`](u) *x* `", "[`](u) *x* `"},
		{"backslash escapes", `\*not italic\* and \<tag\>`, "*not italic* and &lt;tag&gt;"},
		{"headings", "# Title\n### Sub **bold** ###", "*Title*\n*Sub bold*"},
		{"bullets", "- one\n* two\n  + nested", "• one\n• two\n  • nested"},
		{"task list", "- [ ] todo\n- [x] done", "☐ todo\n☑ done"},
		{"ordered", "1. first\n2) second", "1. first\n2. second"},
		{"quote", "> **note** a < b\n> - item", "> *note* a &lt; b\n> • item"},
		{"rule", "a\n\n---\n\nb", "a\n\n──────────\n\nb"},
		{"paragraphs kept", "one\ntwo\n\n\nthree", "one\ntwo\n\nthree"},
		{"fence drops language, escapes, keeps markup", "```go\nif a < b && **c** {\n}\n```", "```\nif a &lt; b &amp;&amp; **c** {\n}\n```"},
		{"indented fence in list", "1. run:\n   ```sh\n   go test ./...\n   ```\n2. done", "1. run:\n```\ngo test ./...\n```\n2. done"},
		{"unclosed fence closed", "text\n```\ncode", "text\n```\ncode\n```"},
		{"tilde fence", "~~~\n~~x~~\n~~~", "```\n~~x~~\n```"},
		{"table", "| name | n |\n|:--|--:|\n| `a` | 1 |\n| bb | 22 |\n\nafter", "```\nname  n\n----  --\na     1\nbb    22\n```\n\nafter"},
		{"table cells escaped", "a | b\n--|--\n<x> | &", "```\na    b\n---  -\n&lt;x&gt;  &amp;\n```"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := toMrkdwn(c.in); got != c.want {
				t.Errorf("toMrkdwn(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

func TestSplitMarkdown(t *testing.T) {
	para := func(c string, n int) string { return strings.Repeat(c, n) }
	cases := []struct {
		name  string
		in    string
		limit int
		want  []string
	}{
		{"fits", "a\n\nb", 100, []string{"a\n\nb"}},
		{"splits at blank line", para("a", 60) + "\n\n" + para("b", 60), 100,
			[]string{para("a", 60), para("b", 60)}},
		{"keeps a fence whole when it fits a message", "intro\n\n```go\n" + para("x", 50) + "\n```\n\nend", 66,
			[]string{"intro", "```go\n" + para("x", 50) + "\n```\n\nend"}},
		{"closes and reopens a long fence", "```go\nline1\nline2\nline3\nline4\n```", 22,
			[]string{"```go\nline1\nline2\n```", "```go\nline3\nline4\n```"}},
		{"a fence cut anyway starts in the room left", "intro\n\n```\n" + strings.Repeat("aaaaaaaaa\n", 4) + "```", 30,
			[]string{"intro\n\n```\naaaaaaaaa\n```", "```\naaaaaaaaa\naaaaaaaaa\n```", "```\naaaaaaaaa\n```"}},
		{"fence never left open at the end", "```\ncode", 100, []string{"```\ncode\n```"}},
		{"long paragraph cut at line ends", "aaaa\nbbbb\ncccc", 10, []string{"aaaa\nbbbb", "cccc"}},
		{"overlong line cut at a space", "one two three four five six", 12, []string{"one two ", "three four ", "five six"}},
		{"overlong code line cut", "```\n" + para("x", 20) + "\n```", 15, []string{"```\n" + para("x", 7) + "\n```", "```\n" + para("x", 7) + "\n```", "```\n" + para("x", 6) + "\n```"}},
		{"fence inside list kept with its item", "1. run:\n   ```sh\n   go test\n   ```\n2. done", 100,
			[]string{"1. run:\n   ```sh\n   go test\n   ```\n2. done"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := splitMarkdown(c.in, c.limit)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("splitMarkdown (-want +got):\n%s", diff)
			}
			for i, p := range got {
				if n := textLen(p); n > c.limit {
					t.Errorf("piece %d is %d characters, limit %d", i, n, c.limit)
				}
			}
		})
	}
}

// TestSplitMarkdownKeepsContent checks on a long answer that cutting loses
// nothing and leaves no fence open: without the fence lines (some added at
// the cuts) the parts hold the lines of the original, in order.
func TestSplitMarkdownKeepsContent(t *testing.T) {
	in := longAnswer()
	parts := splitMarkdown(in, 3000)
	if len(parts) < 8 {
		t.Fatalf("got %d parts, want the 20,000-character fence cut into at least 8", len(parts))
	}
	content := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l != "" && !strings.HasPrefix(l, "```") {
				out = append(out, l)
			}
		}
		return out
	}
	var got []string
	for i, p := range parts {
		fences := 0
		for _, l := range strings.Split(p, "\n") {
			if strings.HasPrefix(l, "```") {
				fences++
			}
		}
		if fences%2 != 0 {
			t.Errorf("part %d leaves a code fence open:\n%s", i, p)
		}
		if strings.Contains(p, "func step") && !strings.HasPrefix(p[strings.Index(p, "```"):], "```go\n") {
			t.Errorf("part %d holds code without its language tag", i)
		}
		got = append(got, content(p)...)
	}
	if diff := cmp.Diff(content(in), got); diff != "" {
		t.Errorf("content changed by splitting (-want +got):\n%s", diff)
	}
}

func TestClipLines(t *testing.T) {
	in := "intro\n```\n" + strings.Repeat("code line\n", 100) + "```\nafter"
	got := clipLines(in, 200)
	if n := textLen(got); n > 200 {
		t.Errorf("clipped to %d characters, want at most 200", n)
	}
	if !strings.HasSuffix(got, "```\n…") {
		t.Errorf("clipped text should close the open fence and end in an ellipsis: %q", got[len(got)-20:])
	}
	if got := clipLines("short", 200); got != "short" {
		t.Errorf("clipLines(short) = %q, want it unchanged", got)
	}
}
