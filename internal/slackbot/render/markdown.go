package render

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the Markdown handling behind AnswerMessages: cutting the
// model's Markdown into pieces Slack accepts without breaking a code fence,
// defusing mentions, and converting Markdown to Slack's older mrkdwn dialect
// for the places that only accept mrkdwn (the notification fallback text).

// zeroWidthSpace breaks a mention token without changing what a reader sees.
const zeroWidthSpace = "\u200b"

// Neutralize defuses the Slack mention tokens in s that would notify people
// (<!channel>, <!here>, <!everyone>, <!subteam^…>, <@U…>, <#C…>) by putting a
// zero-width space after the "<", and the bare words @here, @channel and
// @everyone by putting one after the "@". A model can be talked into writing these by
// the files it reads (prompt injection), and a bot must never ping a channel
// on someone else's behalf. Escaped forms ("&lt;!here&gt;", "&#60;", "&#x3C;")
// are defused too:
// Slack's docs do not say whether a markdown block decodes entities before it
// looks for tokens, so assume it may. Ordinary text and code, including "<"
// that does not start such a token ("a < b", "<-ch", "<div>", "<!--",
// "<!DOCTYPE"), are returned unchanged.
func Neutralize(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		after := 0
		switch {
		case s[i] == '@':
			if broadcastWord(s, i) {
				b.WriteString(s[last : i+1])
				b.WriteString(zeroWidthSpace)
				last = i + 1
			}
			continue
		case s[i] == '<':
			after = i + 1
		case s[i] == '&':
			n := ltEntity(s[i:])
			if n == 0 {
				// "&#64;here" is "@here" to whatever decodes entities.
				if n = charRef(s[i:], '@', "&commat;"); n > 0 && !wordBefore(s, i) && broadcastAt(s, i+n) {
					b.WriteString(s[last : i+n])
					b.WriteString(zeroWidthSpace)
					last = i + n
				}
				continue
			}
			after = i + n
		default:
			continue
		}
		if startsPingToken(s[after:]) {
			b.WriteString(s[last:after])
			b.WriteString(zeroWidthSpace)
			last = after
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// breakBroadcasts defuses the bare @here, @channel and @everyone in s, as
// Neutralize does, for text whose "<" and "&" are already escaped.
func breakBroadcasts(s string) string {
	var b strings.Builder
	last := 0
	for i := strings.IndexByte(s, '@'); i >= 0; {
		if broadcastWord(s, i) {
			b.WriteString(s[last : i+1])
			b.WriteString(zeroWidthSpace)
			last = i + 1
		}
		j := strings.IndexByte(s[i+1:], '@')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// broadcastWord reports whether s[i] is the "@" of a bare @here, @channel
// or @everyone (any case, a word of its own). Slack turns those into
// broadcasts where it links names (link_names, a client's composer), and
// the docs do not say the markdown block never does.
func broadcastWord(s string, i int) bool {
	return !wordBefore(s, i) && broadcastAt(s, i+1)
}

// wordBefore reports whether s[:i] ends in a word character: an "@" there
// is part of an address (ops@here.example), not a broadcast.
func wordBefore(s string, i int) bool {
	return i > 0 && (isWordByteBefore(s, i) || s[i-1] == '_')
}

// broadcastAt reports whether s[j:] starts with here, channel or
// everyone (any case) as a whole word.
func broadcastAt(s string, j int) bool {
	for _, kw := range []string{"here", "channel", "everyone"} {
		end := j + len(kw)
		if end <= len(s) && strings.EqualFold(s[j:end], kw) && (end == len(s) || !isWordByte(s, end) && s[end] != '_') {
			return true
		}
	}
	return false
}

// ltEntity returns the length of the HTML character reference for "<" that
// s starts with ("&lt;" in any case, "&#60;", "&#x3c;", with leading zeros),
// or 0.
func ltEntity(s string) int { return charRef(s, '<', "&lt;") }

// charRef returns the length of the HTML character reference for c that s
// starts with: named (in any case), decimal or hexadecimal, with leading
// zeros; or 0.
func charRef(s string, c byte, named string) int {
	if len(s) >= len(named) && strings.EqualFold(s[:len(named)], named) {
		return len(named)
	}
	if !strings.HasPrefix(s, "&#") {
		return 0
	}
	i, base := 2, 10
	if i < len(s) && (s[i] == 'x' || s[i] == 'X') {
		i, base = i+1, 16
	}
	start, v := i, 0
	for ; i < len(s) && i-start < 8; i++ {
		d := strings.IndexByte("0123456789abcdef", s[i]|0x20)
		if d < 0 || d >= base {
			break
		}
		v = v*base + d
	}
	if i == start || i >= len(s) || s[i] != ';' || v != int(c) {
		return 0
	}
	return i + 1
}

// startsPingToken reports whether s, just after a "<", continues as a token
// that notifies: a special mention (!channel, !here, !everyone, !group,
// !subteam^…, in any case), a user (@U…, @W…, @B… then an ID character) or a
// channel (#C…, #G…, #D…).
func startsPingToken(s string) bool {
	if len(s) < 3 {
		return false
	}
	switch s[0] {
	case '!':
		// "date^" is no mention, but its optional link hides behind the
		// date it shows: <!date^1700000000^{date}^https://evil.example|x>.
		for _, kw := range []string{"channel", "here", "everyone", "group", "subteam^", "date^"} {
			if len(s) > len(kw) && strings.EqualFold(s[1:1+len(kw)], kw) {
				return true
			}
		}
	case '@':
		return strings.IndexByte("UWB", s[1]) >= 0 && isIDByte(s[2])
	case '#':
		return strings.IndexByte("CGD", s[1]) >= 0 && isIDByte(s[2])
	}
	return false
}

// isIDByte reports whether c can be part of a Slack ID (upper case, digits).
func isIDByte(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

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
	lines       []string // paragraph lines, or the fence body
	blankBefore bool     // a blank line separated it from the previous unit
	fence       *fence   // non-nil for a fenced code block
}

// fence is the opening line of a fenced code block, kept so that a block
// split across messages can be closed and reopened with the same language.
type fence struct {
	indent string // leading spaces of the opening line (fences inside list items)
	marker string // "```" or "~~~~" etc.
	info   string // language tag and anything after it
}

func (f *fence) open() string  { return f.indent + f.marker + f.info }
func (f *fence) close() string { return f.indent + f.marker }

// openFence reports whether line opens a fenced code block (CommonMark: three
// or more backticks or tildes; a backtick fence's info has no backtick).
func openFence(line string) (*fence, bool) {
	trimmed := strings.TrimLeft(line, " \t")
	if len(trimmed) < 3 || (trimmed[0] != '`' && trimmed[0] != '~') {
		return nil, false
	}
	c := trimmed[0]
	n := 0
	for n < len(trimmed) && trimmed[n] == c {
		n++
	}
	if n < 3 {
		return nil, false
	}
	info := strings.TrimSpace(trimmed[n:])
	if c == '`' && strings.Contains(info, "`") {
		return nil, false // an inline code span such as ```a``` on one line
	}
	return &fence{indent: line[:len(line)-len(trimmed)], marker: trimmed[:n], info: info}, true
}

// closes reports whether line closes f: the same character, at least as many
// of them, nothing else but spaces.
func (f *fence) closes(line string) bool {
	t := strings.TrimSpace(line)
	if len(t) < len(f.marker) {
		return false
	}
	return strings.Trim(t, f.marker[:1]) == ""
}

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
		if f, ok := openFence(line); ok {
			flush()
			u := mdUnit{blankBefore: blank && len(units) > 0, fence: f}
			for i++; i < len(lines); i++ {
				if f.closes(lines[i]) {
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
	return packLines(u.lines, first, limit, u.fence.open(), u.fence.close())
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

// Markdown to mrkdwn.

var (
	headingRE   = regexp.MustCompile(`^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$`)
	ruleRE      = regexp.MustCompile(`^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$`)
	bulletRE    = regexp.MustCompile(`^(\s*)[-*+]\s+(?:\[([ xX])\]\s+)?(.*)$`)
	orderedRE   = regexp.MustCompile(`^(\s*)(\d{1,9})[.)]\s+(.*)$`)
	quoteRE     = regexp.MustCompile(`^\s{0,3}>\s?(.*)$`)
	tableSepRE  = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$`)
	autolinkRE  = regexp.MustCompile(`^<((?:https?://|mailto:)[^\s<>]+)>`)
	linkURLOKRE = regexp.MustCompile(`^(?i:https?://|mailto:)`)
)

// mrkdwnEscaper escapes the three characters Slack reserves for its own
// <…> tokens; Slack shows the entities as the characters again.
var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// toMrkdwn converts the model's Markdown to Slack mrkdwn: bold **x** → *x*,
// italics → _x_, ~~x~~ → ~x~, [t](u) → <u|t>, headings → bold lines, bullets →
// "•", code fences without their language tag (mrkdwn would show it), tables
// aligned inside a code block (mrkdwn has none), and &, <, > escaped
// everywhere, code included, so no text can form a link or a mention.
func toMrkdwn(md string) string {
	var b strings.Builder
	for i, u := range parseUnits(md) {
		if i > 0 {
			b.WriteString("\n")
			if u.blankBefore {
				b.WriteString("\n")
			}
		}
		if u.fence != nil {
			b.WriteString("```\n")
			for _, l := range u.lines {
				b.WriteString(mrkdwnEscaper.Replace(strings.TrimPrefix(l, u.fence.indent)))
				b.WriteString("\n")
			}
			b.WriteString("```")
			continue
		}
		b.WriteString(mrkdwnLines(u.lines))
	}
	return b.String()
}

// mrkdwnLines converts the lines of one paragraph-like unit.
func mrkdwnLines(lines []string) string {
	var out []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.Contains(line, "|") && i+1 < len(lines) && strings.Contains(lines[i+1], "-") && tableSepRE.MatchString(lines[i+1]) {
			rows := [][]string{tableCells(line)}
			i += 2
			for ; i < len(lines) && strings.Contains(lines[i], "|"); i++ {
				rows = append(rows, tableCells(lines[i]))
			}
			i--
			out = append(out, "```\n"+mrkdwnEscaper.Replace(alignTable(rows))+"\n```")
			continue
		}
		out = append(out, mrkdwnLine(line))
	}
	return strings.Join(out, "\n")
}

func mrkdwnLine(line string) string {
	if m := headingRE.FindStringSubmatch(line); m != nil {
		text := strings.NewReplacer("**", "", "__", "").Replace(m[1])
		if text == "" {
			return ""
		}
		return "*" + inlineMrkdwn(text) + "*"
	}
	if ruleRE.MatchString(line) {
		return "──────────"
	}
	if m := quoteRE.FindStringSubmatch(line); m != nil {
		return "> " + mrkdwnLine(m[1])
	}
	if m := bulletRE.FindStringSubmatch(line); m != nil {
		mark := "• "
		switch m[2] {
		case " ":
			mark = "☐ "
		case "x", "X":
			mark = "☑ "
		}
		return m[1] + mark + inlineMrkdwn(m[3])
	}
	if m := orderedRE.FindStringSubmatch(line); m != nil {
		return m[1] + m[2] + ". " + inlineMrkdwn(m[3])
	}
	return inlineMrkdwn(strings.TrimLeft(line, " \t"))
}

// tableCells splits a pipe-table row into trimmed cells.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	cells := strings.Split(line, "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "`", ""))
	}
	return cells
}

// alignTable lays rows out in columns padded with spaces, the header
// underlined, for a monospace code block.
func alignTable(rows [][]string) string {
	var widths []int
	for _, r := range rows {
		for j, c := range r {
			if j >= len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	writeRow := func(r []string) {
		var cells []string
		for j, w := range widths {
			c := ""
			if j < len(r) {
				c = r[j]
			}
			cells = append(cells, c+strings.Repeat(" ", w-utf8.RuneCountInString(c)))
		}
		b.WriteString(strings.TrimRight(strings.Join(cells, "  "), " "))
	}
	for i, r := range rows {
		if i > 0 {
			b.WriteString("\n")
		}
		writeRow(r)
		if i == 0 {
			var dashes []string
			for _, w := range widths {
				dashes = append(dashes, strings.Repeat("-", max(w, 1)))
			}
			b.WriteString("\n" + strings.Join(dashes, "  "))
		}
	}
	return b.String()
}

// inlineMrkdwn converts inline Markdown (emphasis, code spans, links) and
// escapes &, <, > everywhere else.
func inlineMrkdwn(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		rest := s[i:]
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			b.WriteString(mrkdwnEscaper.Replace(s[i+1 : i+2]))
			i += 2
		case c == '`':
			n := runLen(s, i, '`')
			delim := s[i : i+n]
			end := strings.Index(s[i+n:], delim)
			if end < 0 {
				b.WriteString(delim)
				i += n
				continue
			}
			code := s[i+n : i+n+end]
			if len(code) > 1 && code[0] == ' ' && code[len(code)-1] == ' ' {
				code = code[1 : len(code)-1]
			}
			b.WriteString("`" + mrkdwnEscaper.Replace(code) + "`")
			i += n + end + n
		case c == '[' || (c == '!' && strings.HasPrefix(rest, "![")):
			start := 1
			if c == '!' {
				start = 2
			}
			text, url, n, ok := parseLink(rest[start-1:])
			if !ok {
				b.WriteString(rest[:start])
				i += start
				continue
			}
			b.WriteString(mrkdwnLink(text, url))
			i += start - 1 + n
		case c == '<':
			if m := autolinkRE.FindStringSubmatch(rest); m != nil {
				b.WriteString("<" + linkURL(m[1]) + ">")
				i += len(m[0])
				continue
			}
			b.WriteString("&lt;")
			i++
		case c == '>':
			b.WriteString("&gt;")
			i++
		case c == '&':
			b.WriteString("&amp;")
			i++
		case strings.HasPrefix(rest, "**") || strings.HasPrefix(rest, "__") || strings.HasPrefix(rest, "~~"):
			delim := rest[:2]
			inner, n, ok := emphasis(s, i, delim)
			if !ok {
				b.WriteString(delim)
				i += 2
				continue
			}
			out := "*"
			if delim == "~~" {
				out = "~"
			}
			b.WriteString(out + inlineMrkdwn(inner) + out)
			i += n
		case c == '*' || c == '_':
			inner, n, ok := emphasis(s, i, s[i:i+1])
			if !ok {
				b.WriteByte(c)
				i++
				continue
			}
			b.WriteString("_" + inlineMrkdwn(inner) + "_")
			i += n
		default:
			_, size := utf8.DecodeRuneInString(rest)
			b.WriteString(rest[:size])
			i += size
		}
	}
	return b.String()
}

// emphasis finds the span s[i:] opened by delim and closed by the same
// delimiter, following CommonMark's flanking rules closely enough for model
// output: the content neither starts nor ends with a space, and "_"
// delimiters must sit at word boundaries (snake_case stays as it is).
func emphasis(s string, i int, delim string) (inner string, n int, ok bool) {
	open := i + len(delim)
	if open >= len(s) || s[open] == ' ' || (len(delim) == 1 && s[open] == delim[0]) {
		return "", 0, false
	}
	underscore := delim[0] == '_'
	if underscore && i > 0 && isWordByteBefore(s, i) {
		return "", 0, false
	}
	for j := open; j < len(s); {
		k := strings.Index(s[j:], delim)
		if k < 0 {
			return "", 0, false
		}
		end := j + k
		after := end + len(delim)
		if len(delim) == 1 && after < len(s) && s[after] == delim[0] {
			j = after + 1 // part of a longer run, such as the "**" closing a bold inside
			continue
		}
		if end > open && s[end-1] != ' ' && !(underscore && after < len(s) && isWordByte(s, after)) {
			return s[open:end], after - i, true
		}
		j = end + 1
	}
	return "", 0, false
}

func isWordByteBefore(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func isWordByte(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

func isASCIIPunct(c byte) bool {
	return c < utf8.RuneSelf && unicode.IsPunct(rune(c)) || strings.IndexByte("$+<=>^`|~", c) >= 0
}

// parseLink parses "[text](url "title")" at the start of s and returns the
// text, the url and the length consumed.
func parseLink(s string) (text, url string, n int, ok bool) {
	depth := 0
	closeText := -1
	for i := 0; i < len(s) && closeText < 0; i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
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
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				dest := strings.TrimSpace(s[closeText+2 : i])
				if f := strings.Fields(dest); len(f) > 0 {
					dest = strings.Trim(f[0], "<>")
				}
				return s[1:closeText], dest, i + 1, true
			}
		case '\n':
			return "", "", 0, false
		}
	}
	return "", "", 0, false
}

// mrkdwnLink renders a Markdown link. Only web and mail links become Slack
// links; a relative link (a repo path) has no meaning in Slack and shows as
// its text.
func mrkdwnLink(text, url string) string {
	label := inlineMrkdwn(text)
	if !linkURLOKRE.MatchString(url) {
		if label == "" {
			return mrkdwnEscaper.Replace(url)
		}
		return label
	}
	if label == "" || text == url {
		return "<" + linkURL(url) + ">"
	}
	return "<" + linkURL(url) + "|" + strings.ReplaceAll(label, "|", "¦") + ">"
}

// linkURL makes a URL safe inside Slack's <url|text>: the characters that
// end the token are percent-encoded. "&" stays: Slack reads it in URLs.
var linkURL = strings.NewReplacer("<", "%3C", ">", "%3E", "|", "%7C", " ", "%20").Replace
