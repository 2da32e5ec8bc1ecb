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

// At reports what s[i] starts among the inline constructs that the
// scanners must take whole, in CommonMark's precedence, and where it ends.
// For Text, end is i: nothing is taken. Links are not among them; a caller
// that wants them tries Link where At says Text and s[i] is "[".
func At(s string, i int) (k Kind, end int) {
	switch s[i] {
	case '\\':
		if i+1 < len(s) && IsASCIIPunct(s[i+1]) {
			return Escape, i + 2
		}
	case '`':
		n := RunLen(s, i, '`')
		if j := closingRun(s, i+n, n); j >= 0 {
			return Code, j + n
		}
		return Backticks, i + n
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
	n := min(RunLen(span, 0, '`'), len(span)/2)
	return span[n : len(span)-n]
}

// closingRun finds the backtick run of exactly n that closes a code span
// opened before from, or -1.
func closingRun(s string, from, n int) int {
	for i := from; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := RunLen(s, i, '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
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

// Link parses an inline link [text](dest "title") at the start of s, as
// both sides read one: brackets in the text and parentheses in the
// destination balance, a backslash escapes either, and the text's code
// spans and autolinks are taken whole (CommonMark), so [a](x\)y) links to
// x\)y and [`]`](u) is a link whose text is a code span. The destination
// ends at the line's end. dest is the destination as written, without the
// title or the angle brackets around it; n is the length of the whole
// link.
func Link(s string) (text, dest string, n int, ok bool) {
	depth, closeText := 0, -1
	var spans *codeSpans
	for i := 0; i < len(s) && closeText < 0; i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && IsASCIIPunct(s[i+1]):
			i++
		case c == '`':
			// A bracket in a code span is no bracket. At would look for
			// each run's closer afresh; findCodeSpans finds them all at
			// once, so that a line of brackets and backticks costs no
			// more than one of brackets.
			if spans == nil {
				spans = findCodeSpans(s)
			}
			i = spans.skip(s, i) - 1
		case c == '<':
			if n := autolinkLen(s[i:]); n > 0 {
				i += n - 1 // nor is one in an autolink
			}
		case c == '[':
			depth++
		case c == ']':
			depth--
			if depth == 0 {
				closeText = i
			}
		}
	}
	if closeText < 0 || closeText+1 >= len(s) || s[closeText+1] != '(' {
		return "", "", 0, false
	}
	depth = 0
	for i := closeText + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && IsASCIIPunct(s[i+1]) {
				i++
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				dest = strings.TrimSpace(s[closeText+2 : i])
				if f := strings.Fields(dest); len(f) > 0 {
					dest = strings.TrimSuffix(strings.TrimPrefix(f[0], "<"), ">")
				}
				return s[1:closeText], dest, i + 1, true
			}
		case '\n':
			return "", "", 0, false
		}
	}
	return "", "", 0, false
}

// IsASCIIPunct reports whether c is ASCII punctuation, the characters a
// backslash escapes.
func IsASCIIPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

func isLetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// codeSpans holds the backtick runs of a text and where the code span
// each would open ends: at the end of its closing run, or -1 when nothing
// closes it.
type codeSpans struct {
	runStart, runEnd []int // of each run, in order
	spanEnd          []int
	next             int // the first run skip may still be asked about
}

// findCodeSpans finds every backtick run of s, and the run that would
// close it (the next one of the same length), in two passes.
func findCodeSpans(s string) *codeSpans {
	c := &codeSpans{}
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			n := RunLen(s, i, '`')
			c.runStart, c.runEnd = append(c.runStart, i), append(c.runEnd, i+n)
			i += n - 1
		}
	}
	c.spanEnd = make([]int, len(c.runStart))
	nearest := map[int]int{} // run length → end of the nearest such run after
	for k := len(c.runStart) - 1; k >= 0; k-- {
		n := c.runEnd[k] - c.runStart[k]
		c.spanEnd[k] = -1
		if e, ok := nearest[n]; ok {
			c.spanEnd[k] = e
		}
		nearest[n] = c.runEnd[k]
	}
	return c
}

// skip is where a scan of s goes on from the backtick at i: past the code
// span it opens, or past the run when nothing closes it. Calls come in
// increasing i.
func (c *codeSpans) skip(s string, i int) int {
	for c.next < len(c.runStart) && c.runStart[c.next] < i {
		c.next++
	}
	if c.next == len(c.runStart) || c.runStart[c.next] != i {
		_, end := At(s, i) // the rest of a run whose first backtick was escaped
		return end
	}
	if e := c.spanEnd[c.next]; e >= 0 {
		return e
	}
	return c.runEnd[c.next]
}
