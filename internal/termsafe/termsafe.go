// Package termsafe makes text safe to print on a terminal. What the bot
// prints there comes from the model, from tool output (file contents, git
// history) and from stored sessions, all of which an attacker can write; a
// terminal obeys the control sequences in it: ESC [ moves the cursor and
// rewrites what was printed, OSC 8 hides a link's destination behind its
// label, OSC 52 writes the clipboard, a bare \r overwrites a line with
// another, and an 8-bit C1 byte such as 0x9b starts a sequence without ESC.
//
// Every such character is escaped visibly, in Go's notation (\x1b, \r,
// \u009b), rather than dropped: a reader then sees that something was there
// instead of reading a quietly edited text. Kept as they are: newline, tab,
// and \r\n (printed as \n).
//
// The bidirectional embedding, override and isolate controls (U+202A–U+202E,
// U+2066–U+2069) are escaped too. Terminals that lay out bidirectional text
// (VTE, Konsole, mlterm) let them display code in another order than it is
// read ("Trojan Source", CVE-2021-42574), and legitimate right-to-left text
// needs none of them: Arabic and Hebrew are ordered by their letters alone.
// The marks U+200E, U+200F and U+061C stay: they only settle the direction
// of neutral characters next to them and cannot reverse a run of text.
// The tag characters (U+E0000–U+E007F) are escaped as well: they mirror
// ASCII but are invisible, so a line can carry text a reader never sees
// (instructions smuggled to a model, or a command that differs from the
// one shown); outside a few flag emoji no text needs them.
// Bytes that are not UTF-8 are escaped as \xNN, so no byte reaches the
// terminal that it could read as a C1 control in another encoding.
//
// The package imports no other internal package.
package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Unsafe reports whether r is escaped: a C0 control other than newline and
// tab, DEL, a C1 control, a bidirectional embedding, override or isolate
// control, or a tag character.
func Unsafe(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case 0x80 <= r && r <= 0x9f:
		return true
	case 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true
	case 0xe0000 <= r && r <= 0xe007f:
		return true
	}
	return false
}

// Append appends p to dst with every unsafe character and every byte that
// is not UTF-8 escaped. A \r directly before \n is dropped.
func Append(dst, p []byte) []byte {
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\x`...)
			dst = append(dst, hex[p[0]>>4], hex[p[0]&0xf])
		case r == '\r' && len(p) > 1 && p[1] == '\n':
			// The \n that follows ends the line; alone, \r returns to the
			// start of the line and what follows overwrites it.
		case Unsafe(r):
			q := strconv.QuoteRune(r)
			dst = append(dst, q[1:len(q)-1]...)
		default:
			dst = append(dst, p[:size]...)
		}
		p = p[size:]
	}
	return dst
}

const hex = "0123456789abcdef"

// String is s with every unsafe character escaped, as Append does.
func String(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || Unsafe(r) }) {
		return s
	}
	return string(Append(make([]byte, 0, len(s)+16), []byte(s)))
}
