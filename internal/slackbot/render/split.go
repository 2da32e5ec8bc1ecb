package render

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/mdscan"
)

// This file cuts the model's Markdown into pieces Slack accepts without
// breaking a code fence, counting characters as Slack does.

// textLen counts characters the way Slack's limits are most likely counted
// (UTF-16 code units, as in JavaScript). It is never less than the rune
// count, so a text within the limit by this measure is within it either way.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		if l := utf16.RuneLen(r); l > 0 {
			n += l
		} else {
			n++
		}
	}
	return n
}

// cutText returns the longest prefix of s that is at most limit by textLen,
// preferring to end after a space when there is one in its second half.
func cutText(s string, limit int) (head, tail string) {
	if textLen(s) <= limit {
		return s, ""
	}
	n, end, lastSpace := 0, 0, -1
	for i, r := range s {
		l := max(utf16.RuneLen(r), 1)
		if n+l > limit {
			break
		}
		n += l
		end = i + utf8.RuneLen(r)
		if r == ' ' {
			lastSpace = end
		}
	}
	if lastSpace > end/2 {
		end = lastSpace
	}
	if end == 0 { // limit smaller than the first character: take it anyway so callers progress
		_, size := utf8.DecodeRuneInString(s)
		end = size
	}
	return s[:end], s[end:]
}

// clipText cuts s to at most limit characters (textLen), ending in "…" when
// something was cut.
func clipText(s string, limit int) string {
	if textLen(s) <= limit {
		return s
	}
	head, _ := cutText(s, limit-1)
	return strings.TrimRight(head, " ") + "…"
}

// mdUnit is a piece of Markdown that is only split when it alone is larger
// than a message: a run of non-blank lines (a paragraph, list, table,
// heading) or a whole fenced code block.
type mdUnit struct {
	lines       []string      // paragraph lines, or the fence body
	blankBefore bool          // a blank line separated it from the previous unit
	fence       *mdscan.Fence // non-nil for a fenced code block
}

// reopen and reclose are the lines that close a fenced code block at a
// cut and open it again in the next piece with the same language.
func reopen(f *mdscan.Fence) string  { return f.Indent + f.Marker + f.Info }
func reclose(f *mdscan.Fence) string { return f.Indent + f.Marker }

// parseUnits splits Markdown into units at blank lines and around fenced code
// blocks. A fence left open by the model runs to the end of the text and is
// closed when rendered.
func parseUnits(md string) []mdUnit {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	lines := strings.Split(md, "\n")
	var units []mdUnit
	var para []string
	blank := false
	flush := func() {
		if len(para) > 0 {
			units = append(units, mdUnit{lines: para, blankBefore: blank && len(units) > 0})
			para, blank = nil, false
		}
	}
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], " \t")
		if line == "" {
			flush()
			blank = true
			continue
		}
		if f, ok := mdscan.OpenFence(line); ok {
			flush()
			u := mdUnit{blankBefore: blank && len(units) > 0, fence: &f}
			for i++; i < len(lines); i++ {
				if f.Closes(lines[i]) {
					break
				}
				u.lines = append(u.lines, strings.TrimRight(lines[i], "\r"))
			}
			units = append(units, u)
			blank = false
			continue
		}
		para = append(para, line)
	}
	flush()
	return units
}

// pieces renders u as one or more texts, the first at most first
// characters and the others at most limit. A fence too long for one message
// is closed and reopened with the same opening line in the next piece, so
// every piece is valid Markdown on its own; a paragraph is cut at line ends,
// and a single overlong line at a space.
func (u mdUnit) pieces(first, limit int) []string {
	if u.fence == nil {
		return packLines(u.lines, first, limit, "", "")
	}
	return packLines(u.lines, first, limit, reopen(u.fence), reclose(u.fence))
}

// packLines joins lines with newlines into texts of at most first (the
// first text) and limit (the others) characters, each wrapped in open/close
// lines when those are set. Lines longer than a piece can hold are cut.
func packLines(lines []string, first, limit int, open, close string) []string {
	overhead := 0
	if open != "" {
		overhead = textLen(open) + 1 + textLen(close) + 1
	}
	var out []string
	room := func() int {
		if len(out) == 0 {
			return max(first-overhead, 1)
		}
		return max(limit-overhead, 1)
	}
	var cur []string
	curLen := 0
	emit := func() {
		body := strings.Join(cur, "\n")
		if open != "" {
			if len(cur) == 0 {
				body = open + "\n" + close
			} else {
				body = open + "\n" + body + "\n" + close
			}
		}
		out = append(out, body)
		cur, curLen = nil, 0
	}
	for _, line := range lines {
		for {
			l := textLen(line)
			sep := 0
			if len(cur) > 0 {
				sep = 1
			}
			if curLen+sep+l <= room() {
				cur = append(cur, line)
				curLen += sep + l
				break
			}
			if len(cur) > 0 {
				emit()
				continue
			}
			head, tail := cutText(line, room())
			cur, curLen = []string{head}, textLen(head)
			emit()
			line = tail
			if line == "" {
				break
			}
		}
	}
	if len(cur) > 0 || len(out) == 0 {
		emit()
	}
	return out
}

// splitMarkdown cuts md into texts of at most limit characters at unit
// boundaries (blank lines, code fences). A unit that does not fit in the
// current text starts the next one; only a unit bigger than limit on its own
// is cut, by mdUnit.pieces, starting in the room left in the current text.
func splitMarkdown(md string, limit int) []string {
	var out []string
	var cur strings.Builder
	curLen := 0
	add := func(piece string, blankBefore bool) {
		sep := "\n"
		if blankBefore {
			sep = "\n\n"
		}
		l := textLen(piece)
		if curLen > 0 && curLen+len(sep)+l > limit {
			out = append(out, cur.String())
			cur.Reset()
			curLen = 0
		}
		if curLen > 0 {
			cur.WriteString(sep)
			curLen += len(sep)
		}
		cur.WriteString(piece)
		curLen += l
	}
	for _, u := range parseUnits(md) {
		pieces := u.pieces(limit, limit)
		if len(pieces) > 1 && curLen > 0 {
			// The unit is cut anyway: start it in the room left here
			// rather than leave a short message before it.
			if room := limit - curLen - 2; room >= limit/8 {
				pieces = u.pieces(room, limit)
			}
		}
		for i, p := range pieces {
			add(p, i > 0 || u.blankBefore)
		}
	}
	if curLen > 0 {
		out = append(out, cur.String())
	}
	return out
}
