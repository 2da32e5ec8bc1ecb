package render

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/mdscan"
)

// This file converts Markdown to Slack's older mrkdwn dialect for the
// places that only accept mrkdwn (the notification fallback text).

var (
	headingRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$`) })
	ruleRE    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$`)
	})
	bulletRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)[-*+]\s+(?:\[([ xX])\]\s+)?(.*)$`) })
	orderedRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)(\d{1,9})[.)]\s+(.*)$`) })
	quoteRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s{0,3}>\s?(.*)$`) })
	tableSepRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$`) })
	autolinkRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^<((?:https?://|mailto:)[^\s<>]+)>`) })
	linkURLOKRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?i:https?://|mailto:)`) })
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
				b.WriteString(mrkdwnEscaper.Replace(strings.TrimPrefix(l, u.fence.Indent)))
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
		if strings.Contains(line, "|") && i+1 < len(lines) && strings.Contains(lines[i+1], "-") && tableSepRE().MatchString(lines[i+1]) {
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
	if m := headingRE().FindStringSubmatch(line); m != nil {
		text := strings.NewReplacer("**", "", "__", "").Replace(m[1])
		if text == "" {
			return ""
		}
		return "*" + inlineMrkdwn(text) + "*"
	}
	if ruleRE().MatchString(line) {
		return "──────────"
	}
	if m := quoteRE().FindStringSubmatch(line); m != nil {
		return "> " + mrkdwnLine(m[1])
	}
	if m := bulletRE().FindStringSubmatch(line); m != nil {
		mark := "• "
		switch m[2] {
		case " ":
			mark = "☐ "
		case "x", "X":
			mark = "☑ "
		}
		return m[1] + mark + inlineMrkdwn(m[3])
	}
	if m := orderedRE().FindStringSubmatch(line); m != nil {
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
// escapes &, <, > everywhere else. Escapes, code spans, autolinks and links
// are read as cite reads them (mdscan).
func inlineMrkdwn(s string) string {
	var b strings.Builder
	in := mdscan.NewInline(s)
	for i := 0; i < len(s); {
		rest := s[i:]
		switch k, end := in.At(i); {
		case k != mdscan.Text:
			b.WriteString(mrkdwnToken(k, s[i:end]))
			i = end
		case s[i] == '[' || strings.HasPrefix(rest, "!["):
			start := 1
			if s[i] == '!' {
				start = 2
			}
			text, url, n, ok := in.Link(i+start-1, len(s))
			if !ok {
				b.WriteString(rest[:start])
				i += start
				continue
			}
			b.WriteString(mrkdwnLink(text, url))
			i += start - 1 + n
		case s[i] == '<':
			b.WriteString("&lt;")
			i++
		case s[i] == '>':
			b.WriteString("&gt;")
			i++
		case s[i] == '&':
			b.WriteString("&amp;")
			i++
		case strings.HasPrefix(rest, "**") || strings.HasPrefix(rest, "__") || strings.HasPrefix(rest, "~~"),
			s[i] == '*' || s[i] == '_':
			i += emphasisMrkdwn(&b, s, i)
		default:
			_, size := utf8.DecodeRuneInString(rest)
			b.WriteString(rest[:size])
			i += size
		}
	}
	return b.String()
}

// mrkdwnToken converts what mdscan.Inline.At takes whole: an escaped character,
// a code span, literal backticks or an autolink (a Slack link when it is
// one to the web or mail, its text otherwise).
func mrkdwnToken(k mdscan.Kind, tok string) string {
	switch k {
	case mdscan.Escape:
		return mrkdwnEscaper.Replace(tok[1:])
	case mdscan.Code:
		code := mdscan.CodeText(tok)
		if len(code) > 1 && code[0] == ' ' && code[len(code)-1] == ' ' {
			code = code[1 : len(code)-1]
		}
		return "`" + mrkdwnEscaper.Replace(code) + "`"
	case mdscan.Autolink:
		if m := autolinkRE().FindStringSubmatch(tok); m != nil {
			return "<" + linkURL(m[1]) + ">"
		}
	}
	return mrkdwnEscaper.Replace(tok)
}

// emphasisMrkdwn writes the emphasis s[i:] opens (**, __ and ~~, or * and
// _) in mrkdwn, or its delimiter as text when nothing closes it, and
// returns the length it took.
func emphasisMrkdwn(b *strings.Builder, s string, i int) int {
	delim, out := s[i:i+1], "_"
	if rest := s[i:]; strings.HasPrefix(rest, "**") || strings.HasPrefix(rest, "__") || strings.HasPrefix(rest, "~~") {
		delim, out = rest[:2], "*"
		if delim == "~~" {
			out = "~"
		}
	}
	inner, n, ok := emphasis(s, i, delim)
	if !ok {
		b.WriteString(delim)
		return len(delim)
	}
	b.WriteString(out + inlineMrkdwn(inner) + out)
	return n
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

// mrkdwnLink renders a Markdown link. Only web and mail links become Slack
// links; a relative link (a repo path) has no meaning in Slack and shows as
// its text.
func mrkdwnLink(text, url string) string {
	label := inlineMrkdwn(text)
	if !linkURLOKRE().MatchString(url) {
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
