package mdscan

import "strings"

// Kind is what an inline scanner meets at a position of a line.
type Kind uint8

const (
	// Text is anything else: the caller reads it byte by byte (or rune
	// by rune) as it wishes.
	Text Kind = iota
	// Escape is a backslash and the ASCII punctuation it makes literal:
	// an escaped backtick opens no code span, an escaped bracket no link.
	Escape
	// Code is a code span, backticks included: a run of backticks closed
	// by the next run of exactly the same length.
	Code
	// Backticks is a run of backticks that no run of the same length
	// closes. It is literal text, and a shorter or longer run after it
	// may still open a span.
	Backticks
	// Autolink is <scheme:…> (CommonMark's URI autolink). It binds as
	// tightly as a code span: whichever starts first wins, so a backtick
	// inside one opens nothing.
	Autolink
)

// Inline reads the inline constructs of one line, or of a link's text. It
// finds the line's code spans once, on the first backtick asked about, so
// that a line costs one pass for its backticks and one per link tried,
// however brackets and backticks are mixed. It is not safe for concurrent
// use; make one per line.
type Inline struct {
	s     string
	spans codeSpans // found on the first backtick asked about
}

// NewInline reads s, one line without its line ending (or a link's text).
func NewInline(s string) *Inline { return &Inline{s: s} }

// At reports what the line's byte i starts among the inline constructs
// that the scanners must take whole, in CommonMark's precedence, and where
// it ends. For Text, end is i: nothing is taken. Links are not among them;
// a caller that wants them tries Link where At says Text at a "[".
func (in *Inline) At(i int) (k Kind, end int) {
	s := in.s
	switch s[i] {
	case '\\':
		if i+1 < len(s) && IsASCIIPunct(s[i+1]) {
			return Escape, i + 2
		}
	case '`':
		if in.spans == nil {
			in.spans = findCodeSpans(s)
		}
		if end, ok := in.spans.from(s, i); ok {
			return Code, end
		}
		return Backticks, i + runLen(s, i, '`')
	case '<':
		if n := autolinkLen(s[i:]); n > 0 {
			return Autolink, i + n
		}
	}
	return Text, i
}

// CodeText is the text of a code span as At found it, backticks removed
// but the spaces inside kept.
func CodeText(span string) string {
	n := min(runLen(span, 0, '`'), len(span)/2)
	return span[n : len(span)-n]
}

// autolinkLen is the length of the URI autolink s starts with, or 0: "<",
// a scheme of 2 to 32 characters, ":", no space, control character or
// angle bracket, and ">". Only the first 2 KiB are read, so that a line of
// "<" costs linear time.
func autolinkLen(s string) int {
	s = s[:min(len(s), 2048)]
	i := 1
	for i < len(s) && i <= 33 && (isLetter(s[i]) || i > 1 && (isDigit(s[i]) || s[i] == '+' || s[i] == '.' || s[i] == '-')) {
		i++
	}
	if i < 3 || i > 33 || i >= len(s) || s[i] != ':' {
		return 0
	}
	for i++; i < len(s); i++ {
		switch c := s[i]; {
		case c == '>':
			return i + 1
		case c <= ' ' || c == '<' || c == 0x7f:
			return 0
		}
	}
	return 0
}

// Link parses an inline link [text](dest "title") at byte i of the line,
// reading no further than end. Brackets in the text and parentheses in the
// destination balance, a backslash escapes either, and the text's code
// spans and autolinks are taken whole (CommonMark), so [a](x\)y) links to
// x\)y and [`]`](u) is a link whose text is a code span. The destination
// ends at the line's end. dest is the destination as written, without the
// title or the angle brackets around it; n is the length of the whole
// link.
func (in *Inline) Link(i, end int) (text, dest string, n int, ok bool) {
	s := in.s[:end]
	closeText := in.linkText(i, end)
	if closeText < 0 || closeText+1 >= len(s) || s[closeText+1] != '(' {
		return "", "", 0, false
	}
	depth := 0
	for j := closeText + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if j+1 < len(s) && IsASCIIPunct(s[j+1]) {
				j++
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				dest = strings.TrimSpace(s[closeText+2 : j])
				if f := strings.Fields(dest); len(f) > 0 {
					dest = strings.TrimSuffix(strings.TrimPrefix(f[0], "<"), ">")
				}
				return s[i+1 : closeText], dest, j + 1 - i, true
			}
		case '\n':
			return "", "", 0, false
		}
	}
	return "", "", 0, false
}

// linkText finds the "]" that closes the link text opened at in.s[i], or
// -1. A bracket in a code span or an autolink is no bracket, and neither is
// one past end, where a span or autolink that runs on stops the search.
func (in *Inline) linkText(i, end int) int {
	depth := 0
	for j := i; j < end; j++ {
		switch in.s[j] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return j
			}
		case '\\', '`', '<':
			if k, e := in.At(j); k != Text {
				if e > end {
					return -1
				}
				j = e - 1
			}
		}
	}
	return -1
}

// IsASCIIPunct reports whether c is ASCII punctuation, the characters a
// backslash escapes.
func IsASCIIPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

func isLetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// codeSpans holds, for each backtick run of a line, where the code span it
// would open ends: after its closing run (the next run of the same
// length). Indexed by the run's start: 0 for no run start, -1 for a run
// that nothing closes.
type codeSpans []int32

// findCodeSpans finds every backtick run of s, and the run that would
// close it, in one pass from the end.
func findCodeSpans(s string) codeSpans {
	c := make(codeSpans, len(s))
	nearest := map[int]int32{} // run length → end of the nearest such run after
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != '`' || i > 0 && s[i-1] == '`' {
			continue
		}
		n := runLen(s, i, '`')
		c[i] = -1
		if e, ok := nearest[n]; ok {
			c[i] = e
		}
		nearest[n] = int32(i + n)
	}
	return c
}

// from is where the code span opened by the backticks at s[i] ends, and
// whether one does.
func (c codeSpans) from(s string, i int) (int, bool) {
	if c[i] == 0 {
		// The rest of a run whose first backtick was escaped: it opens
		// a span of its own length.
		n := runLen(s, i, '`')
		if j := closingRun(s, i+n, n); j >= 0 {
			return j + n, true
		}
		return 0, false
	}
	return int(c[i]), c[i] > 0
}

// closingRun finds the backtick run of exactly n that closes a code span
// opened before from, or -1.
func closingRun(s string, from, n int) int {
	for i := from; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := runLen(s, i, '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}
