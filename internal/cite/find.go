package cite

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/mdscan"
)

// Citation is a reference to code as found in an answer.
type Citation struct {
	Path       string // as written, before Normalize
	Start, End int    // 1-based lines, inclusive; 0, 0 for a whole file
	Raw        string // the exact text at Offset that Rewrite replaces or flags
	Offset     int    // byte offset of Raw in the Markdown given to Find
	Code       bool   // Raw is an inline code span (with its backticks)
	Linked     bool   // Raw is a Markdown link (or image) whose text is the citation
	Dest       string // the destination of a Linked citation, as written
	InTable    bool   // in a table row, which Slack shows as preformatted text
}

// String is the canonical spelling, path, path:N or path:N-M.
func (c Citation) String() string {
	switch {
	case c.Start <= 0:
		return c.Path
	case c.End <= c.Start:
		return c.Path + ":" + strconv.Itoa(c.Start)
	}
	return c.Path + ":" + strconv.Itoa(c.Start) + "-" + strconv.Itoa(c.End)
}

// Find returns the code citations in markdown, in order. It errs on the side
// of precision, because a wrong guess would put a false warning into an
// answer:
//
//   - In prose, a citation needs a line: path:12, path:10-20, path:10–20,
//     path:L10-L20, path#L10-L20, Go's path:12:5 (line 12), or
//     "path lines 10-20" / "path (line 12)". Trailing punctuation and
//     emphasis around it are not part of it.
//   - An inline code span that holds exactly a path, with or without a line,
//     is a citation (`internal/x.go:12`, `internal/x.go`); a span holding
//     anything else (a command, an expression) is not read.
//   - A path has a slash or a known file extension (or is a well-known file
//     such as Makefile or a dotfile), and no spaces. URLs, host:port, times,
//     IPv6 addresses and Windows paths are not citations.
//   - A Markdown link or image whose text is a citation, with or without a
//     line, is reported with Linked set and its destination in Dest, so
//     that a link the model made is checked like any citation and never
//     keeps a destination of its own (see Rewrite).
//   - Fenced code blocks are skipped entirely.
func Find(markdown string) []Citation {
	lines := mdscan.Lines(markdown)
	table := tableLines(lines)
	var out []Citation
	for i, l := range lines {
		if !l.Fenced {
			out = scanLine(out, l.Body, l.Offset, table[i])
		}
	}
	return out
}

var tableSepRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`) })

// tableLines marks the rows of Markdown tables: a line with "|" followed by a
// separator row, and the "|" lines after it. The Slack renderer turns tables
// into preformatted text, where a link would show as raw Markdown.
func tableLines(lines []mdscan.Line) []bool {
	t := make([]bool, len(lines))
	for i := 0; i+1 < len(lines); i++ {
		if lines[i].Fenced || lines[i+1].Fenced || !strings.Contains(lines[i].Text, "|") {
			continue
		}
		sep := lines[i+1].Body
		if !strings.Contains(sep, "-") || !tableSepRE().MatchString(sep) {
			continue
		}
		for j := i; j < len(lines) && !lines[j].Fenced && strings.Contains(lines[j].Text, "|"); j++ {
			t[j] = true
			i = j
		}
	}
	return t
}

// linesRE is a line range written in words after a path:
// "path lines 10-20", "path, line 12", "path (lines 10–20)".
var linesRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(,?[ \t]+(\()?)[Ll]ines?[ \t]+(\d{1,9})(?:[ \t]*(?:-|–|to)[ \t]*L?(\d{1,9}))?`)
})

// lineScan finds the citations in one line outside fenced code. Code
// spans, escapes and autolinks are read as the Slack renderer reads them
// (mdscan), so that what it shows as code is only ever cited whole.
type lineScan struct {
	line  string
	in    *mdscan.Inline // line's inline constructs
	base  int            // byte offset of line in the Markdown given to Find
	table bool           // the line is a table row
	out   []Citation
}

func scanLine(out []Citation, line string, base int, table bool) []Citation {
	s := &lineScan{line: line, in: mdscan.NewInline(line), base: base, table: table, out: out}
	for i := 0; i < len(line); {
		switch k, end := s.in.At(i); {
		case k == mdscan.Code:
			i = s.codeSpan(i, end)
		case k != mdscan.Text:
			i = end // an escape, literal backticks or an autolink: no citation
		case line[i] == '\\':
			i += 2 // a backslash before anything else is no part of a path
		case line[i] == '[':
			i = s.link(i)
		case strings.HasPrefix(line[i:], flagMark[1:]):
			// A flag Rewrite added: its text is not the answer's, and the
			// "_" closing it must not stick to what follows. Its reason
			// holds no backtick; text that does is not a flag, and a
			// code span opened in it must be seen.
			if j := strings.Index(line[i:], ")_"); j >= 0 && !strings.Contains(line[i:i+j], "`") {
				i += j + 2
			} else {
				i += len(flagMark) - 1
			}
		default:
			i = s.prose(i)
		}
	}
	return s.out
}

func (s *lineScan) add(r ref, start, end int, code, linked bool, dest string) {
	s.out = append(s.out, Citation{Path: r.path, Start: r.start, End: r.end, Raw: s.line[start:end],
		Offset: s.base + start, Code: code, Linked: linked, Dest: dest, InTable: s.table})
}

// codeSpan reads the code span s.line[i:end]: one that holds exactly a
// path, with or without a line, is a citation. It returns where the scan
// goes on.
func (s *lineScan) codeSpan(i, end int) int {
	if r, ok := parseRef(strings.TrimSpace(mdscan.CodeText(s.line[i:end]))); ok && r.rest == "" {
		if r.start == 0 {
			r, end = withLines(r, s.line, end)
		}
		s.add(r, i, end, true, false, "")
	}
	return end
}

// link reads the inline link at s.line[i], if there is one.
func (s *lineScan) link(i int) int {
	line := s.line
	text, dest, n, ok := s.in.Link(i, min(len(line), i+maxLink))
	if !ok {
		return i + 1
	}
	// Any link whose text reads as a citation is one, with or without a
	// line: [README.md](https://elsewhere) claims to be the repository's
	// file as much as [README.md:1](…) does. An image's "!" belongs to
	// it, so that Rewrite replaces the whole image.
	start := i
	if i > 0 && line[i-1] == '!' && (i < 2 || line[i-2] != '\\') {
		start = i - 1
	}
	if r, ok := parseRef(linkText(text)); ok && r.rest == "" {
		s.add(r, start, i+n, false, true, dest)
	}
	return i + n
}

// prose reads the run of path characters at s.line[i]: a citation in prose
// needs a line.
func (s *lineScan) prose(i int) int {
	line := s.line
	r, size := utf8.DecodeRuneInString(line[i:])
	if !isRunRune(r) {
		return i + size
	}
	if end := s.urlEnd(i); end > i {
		return end
	}
	run := takeRun(line[i:])
	if !strings.ContainsAny(run, "./:#") { // a plain word, most of prose
		return i + len(run)
	}
	if r, lead, ok := plainRef(run); ok {
		end := i + len(run) - len(r.rest)
		if r.start == 0 && r.rest == "" {
			r, end = withLines(r, line, end)
		}
		if r.start > 0 {
			s.add(r, i+lead, end, false, false, "")
		}
	}
	return i + len(run)
}

// urlEnd is where the URL at s.line[at] ends (scheme://… up to the next
// space, angle bracket or code span), at if there is none. A code span
// binds tighter than a bare URL, which is only text to CommonMark: in
// http://h/a`x.go:1` the span is code all the same.
func (s *lineScan) urlEnd(at int) int {
	line, i := s.line, at
	for i < len(line) && i-at <= 32 && (isLetter(line[i]) || i > at && (isDigit(line[i]) || line[i] == '+' || line[i] == '.' || line[i] == '-')) {
		i++
	}
	if i == at || !strings.HasPrefix(line[i:], "://") {
		return at
	}
	for j := i; j < len(line); j++ {
		if strings.IndexByte(" \t<>", line[j]) >= 0 {
			return j
		}
		switch k, end := s.in.At(j); k {
		case mdscan.Code:
			return j
		case mdscan.Backticks:
			j = end - 1
		case mdscan.Escape:
			if line[j+1] == '`' {
				j++ // an escaped backtick opens nothing
			}
		}
	}
	return len(line)
}

// withLines extends a bare path ending at end with a line range written in
// words after it, if there is one.
func withLines(r ref, line string, end int) (ref, int) {
	// The regexp sees a bounded window: Go's backtracker costs time in
	// proportion to the input it is given, not to what it matches.
	s := line[end:min(len(line), end+64)]
	m := linesRE().FindStringSubmatchIndex(s)
	if m == nil {
		return r, end
	}
	n := m[1]
	if n < len(s) && (isRunRune(rune(s[n])) && s[n] != '.' && s[n] != ':' || s[n] == '.' && n+1 < len(s) && s[n+1] != ' ') {
		return r, end // the number runs on into a word: "line 10000.go"
	}
	if m[4] >= 0 { // "(" opened: the range counts only if it is closed
		if n >= len(s) || s[n] != ')' {
			return r, end
		}
		n++
	}
	r.start, _ = strconv.Atoi(s[m[6]:m[7]])
	r.end = r.start
	if m[8] >= 0 {
		r.end, _ = strconv.Atoi(s[m[8]:m[9]])
	}
	if r.start == 0 {
		return ref{path: r.path}, end
	}
	return r, end + n
}

// maxLink bounds the length of a Markdown link Find recognises, so that a
// line of unmatched brackets costs linear time, not quadratic.
const maxLink = 4096

// linkText is what a link's text says once its Markdown is read: emphasis
// and code backticks around it and backslash escapes go, so that
// [`internal/\_gen\_/x.go:4`](…) is read as internal/_gen_/x.go:4.
func linkText(text string) string {
	text = strings.TrimSpace(text)
	// Emphasis around the whole text: [**README.md:1**](…).
	for len(text) > 2 && (text[0] == '*' || text[0] == '_') && text[len(text)-1] == text[0] {
		text = strings.TrimSpace(text[1 : len(text)-1])
	}
	if len(text) > 2 && text[0] == '`' && text[len(text)-1] == '`' {
		return strings.TrimSpace(strings.Trim(text, "`"))
	}
	if !strings.Contains(text, "\\") {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if text[i] == '\\' && i+1 < len(text) && mdscan.IsASCIIPunct(text[i+1]) {
			i++
		}
		b.WriteByte(text[i])
	}
	return b.String()
}
