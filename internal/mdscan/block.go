package mdscan

import "strings"

// Fence is the opening line of a fenced code block. The rules are
// CommonMark's but for indentation, which may be any (a fence inside a
// list item is indented by the item's marker): three or more backticks or
// tildes open a block, a backtick fence's info string holds no backtick,
// and a line of at least as many of the same character, with nothing else
// but spaces, closes it. A block left open runs to the end of the text.
type Fence struct {
	Indent string // the spaces and tabs before the marker
	Marker string // the run of backticks or tildes, "```" or "~~~~"
	Info   string // the info string (language tag and the rest), trimmed
}

// OpenFence reports whether line, without its line ending, opens a fenced
// code block.
func OpenFence(line string) (Fence, bool) {
	t := strings.TrimLeft(line, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return Fence{}, false
	}
	n := runLen(t, 0, t[0])
	if n < 3 {
		return Fence{}, false
	}
	info := strings.TrimSpace(t[n:])
	if t[0] == '`' && strings.Contains(info, "`") {
		return Fence{}, false // an inline code span such as ```a``` on one line
	}
	return Fence{Indent: line[:len(line)-len(t)], Marker: t[:n], Info: info}, true
}

// Closes reports whether line closes the block f opened: the same
// character, at least as many of them, nothing else but spaces.
func (f Fence) Closes(line string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(f.Marker) && strings.Trim(t, f.Marker[:1]) == ""
}

// Line is one line of a Markdown text as Lines cuts it.
type Line struct {
	Text   string // the line with its line ending, if it has one
	Body   string // Text without its trailing "\r" and "\n"
	Offset int    // byte offset of Text in the text
	Fenced bool   // in a fenced code block, the fence lines included
}

// Lines cuts md into its lines and marks those of fenced code blocks.
// Joining the Texts gives md back.
func Lines(md string) []Line {
	texts := strings.SplitAfter(md, "\n")
	lines := make([]Line, len(texts))
	var open *Fence
	off := 0
	for i, t := range texts {
		l := Line{Text: t, Body: strings.TrimRight(t, "\r\n"), Offset: off}
		off += len(t)
		switch {
		case open != nil:
			l.Fenced = true
			if open.Closes(l.Body) {
				open = nil
			}
		default:
			if f, ok := OpenFence(l.Body); ok {
				l.Fenced, open = true, &f
			}
		}
		lines[i] = l
	}
	return lines
}

// runLen is the length of the run of c starting at s[i].
func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}
