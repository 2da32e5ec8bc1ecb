package mdscan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOpenFence(t *testing.T) {
	tests := []struct {
		name, line string
		want       Fence
		ok         bool
	}{
		{"backticks", "```", Fence{Marker: "```"}, true},
		{"language", "```go", Fence{Marker: "```", Info: "go"}, true},
		{"info with spaces", "````  go title=x  ", Fence{Marker: "````", Info: "go title=x"}, true},
		{"tildes", "~~~python", Fence{Marker: "~~~", Info: "python"}, true},
		{"tilde info may hold a backtick", "~~~ a`b", Fence{Marker: "~~~", Info: "a`b"}, true},
		{"in a list item", "   ```sh", Fence{Indent: "   ", Marker: "```", Info: "sh"}, true},
		{"tab indent", "\t~~~", Fence{Indent: "\t", Marker: "~~~"}, true},
		{"two backticks", "``", Fence{}, false},
		{"inline span on one line", "```a```", Fence{}, false},
		{"backtick in info", "``` a`b", Fence{}, false},
		{"text first", "a ```", Fence{}, false},
		{"mixed", "``~", Fence{}, false},
		{"empty", "", Fence{}, false},
	}
	for _, tt := range tests {
		got, ok := OpenFence(tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: OpenFence(%q) = %+v, %v; want %+v, %v", tt.name, tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFenceCloses(t *testing.T) {
	f := Fence{Marker: "````"}
	tests := []struct {
		line string
		want bool
	}{
		{"````", true},
		{"  `````  ", true},
		{"```", false},  // shorter
		{"~~~~", false}, // another character
		{"```` go", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := f.Closes(tt.line); got != tt.want {
			t.Errorf("Closes(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestLines(t *testing.T) {
	tests := []struct {
		name, md string
		fenced   string // one letter a line: f fenced, - not
	}{
		{"plain", "a\nb", "--"},
		{"closed fence", "a\n```go\nx\n```\nb", "-fff-"},
		{"closing needs as many", "````\n```\n````\nb", "fff-"},
		{"tilde block holds backticks", "~~~\n```\n~~~\n`x`", "fff-"},
		{"unclosed runs to the end", "a\n```\nx\n\ny", "-ffff"},
		{"CRLF", "```\r\nx\r\n```\r\nb\r\n", "fff--"},
		{"indented in a list", "1. run:\n   ```sh\n   go test\n   ```\n2. done", "-fff-"},
		{"span on one line is no fence", "```a```\nb", "--"},
	}
	for _, tt := range tests {
		lines := Lines(tt.md)
		var got, joined strings.Builder
		for _, l := range lines {
			if l.Fenced {
				got.WriteByte('f')
			} else {
				got.WriteByte('-')
			}
			if tt.md[l.Offset:l.Offset+len(l.Text)] != l.Text || l.Body != strings.TrimRight(l.Text, "\r\n") {
				t.Errorf("%s: line %+v is not at its offset", tt.name, l)
			}
			joined.WriteString(l.Text)
		}
		if got.String() != tt.fenced || joined.String() != tt.md {
			t.Errorf("%s: Lines(%q) fenced %q, joined %q; want %q", tt.name, tt.md, got.String(), joined.String(), tt.fenced)
		}
	}
}

func TestAt(t *testing.T) {
	tests := []struct {
		name, s string
		i       int
		kind    Kind
		end     int
	}{
		{"text", "abc", 0, Text, 0},
		{"code span", "`a` b", 0, Code, 3},
		{"double backticks hold a single one", "``a ` b`` c", 0, Code, 9},
		{"closing run must be as long", "``a``` b``", 0, Code, 10},
		{"unclosed run is literal", "``a` b", 0, Backticks, 2},
		{"a shorter run may open after an unclosed one", "``a` b`", 3, Code, 7},
		{"escaped backtick", "\\`a`", 0, Escape, 2},
		{"the rest of a run after an escaped backtick", "\\``a`", 2, Code, 5},
		{"escaped bracket", "\\[a](b)", 0, Escape, 2},
		{"backslash before a letter is text", "\\a", 0, Text, 0},
		{"backslash at the end", "a\\", 1, Text, 1},
		{"autolink", "<https://x.y/a> z", 0, Autolink, 15},
		{"autolink holds a backtick", "<https://x.y/`a> `b`", 0, Autolink, 16},
		{"autolink any scheme", "<irc://h/c>", 0, Autolink, 11},
		{"one-letter scheme is no autolink", "<a:b>", 0, Text, 0},
		{"space ends it", "<https://x y>", 0, Text, 0},
		{"no scheme", "<x.go>", 0, Text, 0},
		{"unclosed", "<https://x", 0, Text, 0},
		{"less-than", "a < b", 2, Text, 2},
	}
	for _, tt := range tests {
		k, end := NewInline(tt.s).At(tt.i)
		if k != tt.kind || end != tt.end {
			t.Errorf("%s: At(%q, %d) = %v, %d; want %v, %d", tt.name, tt.s, tt.i, k, end, tt.kind, tt.end)
		}
	}
}

func TestCodeText(t *testing.T) {
	for span, want := range map[string]string{"`a`": "a", "`` a ` b ``": " a ` b "} {
		if got := CodeText(span); got != want {
			t.Errorf("CodeText(%q) = %q, want %q", span, got, want)
		}
	}
}

func TestLink(t *testing.T) {
	type link struct {
		Text, Dest string
		N          int
		OK         bool
	}
	tests := []struct {
		name, s string
		want    link
	}{
		{"plain", "[a](b) c", link{"a", "b", 6, true}},
		{"title", `[a](https://x.y "t") c`, link{"a", "https://x.y", 20, true}},
		{"angle brackets", "[a](<b> 't')", link{"a", "b", 12, true}},
		{"nested brackets", "[[a] b](c)", link{"[a] b", "c", 10, true}},
		{"image inside", "[![i](p.png)](u)", link{"![i](p.png)", "u", 16, true}},
		{"balanced parentheses", "[w](https://x/Go_(lang)) z", link{"w", "https://x/Go_(lang)", 24, true}},
		{"escaped bracket in text", `[a\]b](c)`, link{`a\]b`, "c", 9, true}},
		// Code spans bind tighter than link brackets: a "]" inside one
		// closes nothing, and a span that runs past the "](" leaves no
		// link.
		{"bracket in a code span", "[a `]` b](c)", link{"a `]` b", "c", 12, true}},
		{"code span over the closing bracket", "[`](u) a.go:1 `", link{}},
		{"escaped backtick before a span", "[\\`` ]` ](u)", link{"\\`` ]` ", "u", 12, true}},
		{"long text of brackets and backticks", "[" + strings.Repeat("`[", 3000) + "](u)", link{}},
		{"bracket in an autolink", "[<https://x/]>](u)", link{"<https://x/]>", "u", 18, true}},
		// A backslash escapes a parenthesis in the destination too: the
		// link runs to the unescaped one.
		{"escaped parenthesis in destination", `[a](x\)y) z`, link{"a", `x\)y`, 9, true}},
		{"escaped opening parenthesis", `[a](x\(y)`, link{"a", `x\(y`, 9, true}},
		{"destination ends at the line", "[a](b\nc)", link{}},
		{"text may span lines", "[a\nb](c)", link{"a\nb", "c", 8, true}},
		{"no destination", "[a] (b)", link{}},
		{"unclosed text", "[a(b)", link{}},
		{"unclosed destination", "[a](b", link{}},
	}
	for _, tt := range tests {
		var got link
		got.Text, got.Dest, got.N, got.OK = NewInline(tt.s).Link(0, len(tt.s))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Link(%q) (-want +got):\n%s", tt.name, tt.s, diff)
		}
	}
}

// TestLinkWithin holds Link to its bounds: it starts where it is asked to
// and reads nothing past end, so a code span that runs past end leaves no
// link.
func TestLinkWithin(t *testing.T) {
	s := "[a](b) [c `](d)` e](f)"
	in := NewInline(s)
	if text, dest, n, ok := in.Link(7, len(s)); text != "c `](d)` e" || dest != "f" || n != 15 || !ok {
		t.Errorf("Link(7) = %q, %q, %d, %v", text, dest, n, ok)
	}
	if _, _, _, ok := in.Link(7, 14); ok {
		t.Error("Link(7, 14) found a link across the end of its window")
	}
	if _, _, _, ok := in.Link(0, 5); ok {
		t.Error("Link(0, 5) found a link whose destination runs past the end")
	}
}

func TestIsASCIIPunct(t *testing.T) {
	var got []byte
	for c := range byte(0x80) {
		if IsASCIIPunct(c) {
			got = append(got, c)
		}
	}
	if want := "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"; string(got) != want {
		t.Errorf("IsASCIIPunct holds %q, want %q", got, want)
	}
}
