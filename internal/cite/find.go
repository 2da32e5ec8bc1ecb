package cite

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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
	lines := strings.SplitAfter(markdown, "\n")
	fenced := make([]bool, len(lines))
	var open *fenceMark
	for i, l := range lines {
		l = strings.TrimRight(l, "\r\n")
		if open != nil {
			fenced[i] = true
			if open.closes(l) {
				open = nil
			}
			continue
		}
		if f, ok := openFence(l); ok {
			fenced[i], open = true, f
		}
	}
	table := tableLines(lines, fenced)
	var out []Citation
	off := 0
	for i, l := range lines {
		if !fenced[i] {
			out = scanLine(out, strings.TrimRight(l, "\r\n"), off, table[i])
		}
		off += len(l)
	}
	return out
}

// fenceMark is the opening of a fenced code block. The rules match the
// Slack renderer's, so what it shows as code is what Find leaves alone: any
// indentation (fences inside list items), three or more backticks or tildes,
// closed by at least as many of the same, and open to the end if unclosed.
type fenceMark struct {
	char byte
	n    int
}

func openFence(line string) (*fenceMark, bool) {
	t := strings.TrimLeft(line, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return nil, false
	}
	n := runLen(t, 0, t[0])
	if n < 3 || (t[0] == '`' && strings.Contains(t[n:], "`")) {
		return nil, false
	}
	return &fenceMark{char: t[0], n: n}, true
}

func (f *fenceMark) closes(line string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= f.n && strings.Trim(t, string(f.char)) == ""
}

var tableSepRE = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// tableLines marks the rows of Markdown tables: a line with "|" followed by a
// separator row, and the "|" lines after it. The Slack renderer turns tables
// into preformatted text, where a link would show as raw Markdown.
func tableLines(lines []string, fenced []bool) []bool {
	t := make([]bool, len(lines))
	for i := 0; i+1 < len(lines); i++ {
		if fenced[i] || fenced[i+1] || !strings.Contains(lines[i], "|") {
			continue
		}
		sep := strings.TrimRight(lines[i+1], "\r\n")
		if !strings.Contains(sep, "-") || !tableSepRE.MatchString(sep) {
			continue
		}
		for j := i; j < len(lines) && !fenced[j] && strings.Contains(lines[j], "|"); j++ {
			t[j] = true
			i = j
		}
	}
	return t
}

var (
	autolinkRE = regexp.MustCompile(`^<[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]*>`)
	// linesRE is a line range written in words after a path:
	// "path lines 10-20", "path, line 12", "path (lines 10–20)".
	linesRE = regexp.MustCompile(`^(,?[ \t]+(\()?)[Ll]ines?[ \t]+(\d{1,9})(?:[ \t]*(?:-|–|to)[ \t]*L?(\d{1,9}))?`)
)

func scanLine(out []Citation, line string, base int, table bool) []Citation {
	add := func(r ref, start, end int, code, linked bool) {
		out = append(out, Citation{Path: r.path, Start: r.start, End: r.end, Raw: line[start:end],
			Offset: base + start, Code: code, Linked: linked, InTable: table})
	}
	addLink := func(r ref, start, end int, dest string) {
		add(r, start, end, false, true)
		out[len(out)-1].Dest = dest
	}
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == '\\':
			i += 2
		case c == '`':
			n := runLen(line, i, '`')
			j := closingRun(line, i+n, n)
			if j < 0 {
				i += n
				continue
			}
			end := j + n
			if r, ok := parseRef(strings.TrimSpace(line[i+n : j])); ok && r.rest == "" {
				if r.start == 0 {
					r, end = withLines(r, line, end)
				}
				add(r, i, end, true, false)
			}
			i = end
		case c == '[':
			text, dest, n, ok := mdLink(line[i:min(len(line), i+maxLink)])
			if !ok {
				i++
				continue
			}
			// Any link whose text reads as a citation is one, with or
			// without a line: [README.md](https://elsewhere) claims to be
			// the repository's file as much as [README.md:1](…) does.
			// An image's "!" belongs to it, so that Rewrite replaces the
			// whole image.
			start := i
			if i > 0 && line[i-1] == '!' && (i < 2 || line[i-2] != '\\') {
				start = i - 1
			}
			if r, ok := parseRef(linkText(text)); ok && r.rest == "" {
				addLink(r, start, i+n, dest)
			}
			i += n
		case c == '<':
			if m := autolinkRE.FindStringIndex(line[i:min(len(line), i+2048)]); m != nil {
				i += m[1]
			} else {
				i++
			}
		case strings.HasPrefix(line[i:], flagMark[1:]):
			// A flag Rewrite added: its text is not the answer's, and the
			// "_" closing it must not stick to what follows.
			if j := strings.Index(line[i:], ")_"); j >= 0 {
				i += j + 2
			} else {
				i += len(flagMark) - 1
			}
		default:
			r, size := utf8.DecodeRuneInString(line[i:])
			if !isRunRune(r) {
				i += size
				continue
			}
			if n := urlLen(line[i:]); n > 0 {
				i += n
				continue
			}
			run := takeRun(line[i:])
			if !strings.ContainsAny(run, "./:#") { // a plain word, most of prose
				i += len(run)
				continue
			}
			if r, lead, ok := plainRef(run); ok {
				end := i + len(run) - len(r.rest)
				if r.start == 0 && r.rest == "" {
					r, end = withLines(r, line, end)
				}
				if r.start > 0 {
					add(r, i+lead, end, false, false)
				}
			}
			i += len(run)
		}
	}
	return out
}

// urlLen is the length of the URL at the start of s (scheme://… up to the
// next space or angle bracket), 0 if there is none.
func urlLen(s string) int {
	i := 0
	for i < len(s) && i <= 32 && (isLetter(s[i]) || i > 0 && (isDigit(s[i]) || s[i] == '+' || s[i] == '.' || s[i] == '-')) {
		i++
	}
	if i == 0 || !strings.HasPrefix(s[i:], "://") {
		return 0
	}
	if j := strings.IndexAny(s[i:], " \t<>"); j >= 0 {
		return i + j
	}
	return len(s)
}

func isLetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }

// withLines extends a bare path ending at end with a line range written in
// words after it, if there is one.
func withLines(r ref, line string, end int) (ref, int) {
	// The regexp sees a bounded window: Go's backtracker costs time in
	// proportion to the input it is given, not to what it matches.
	s := line[end:min(len(line), end+64)]
	m := linesRE.FindStringSubmatchIndex(s)
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

// plainRef reads a run of prose. Emphasis markers (_x.go:1_, ~~x.go:1~~)
// are not part of the path when the run also ends with them.
func plainRef(run string) (ref, int, bool) {
	lead := 0
	for lead < len(run) && (run[lead] == '_' || run[lead] == '~') {
		lead++
	}
	if lead > 0 {
		if r, ok := parseRef(run[lead:]); ok && strings.ContainsAny(r.rest, run[:lead]) && trailingOnly(r.rest) {
			return r, lead, true
		}
	}
	r, ok := parseRef(run)
	if !ok || !trailingOnly(r.rest) {
		return ref{}, 0, false
	}
	return r, 0, true
}

// trailingOnly reports whether s is punctuation that may follow a citation
// in prose: "x.go:12." "x.go:12:" "_x.go:12_".
func trailingOnly(s string) bool {
	return strings.Trim(s, ".:_~") == ""
}

type ref struct {
	path       string
	start, end int
	rest       string // what follows the citation in the text parsed
}

// parseRef reads a path and an optional line suffix from the start of s.
func parseRef(s string) (ref, bool) {
	k := strings.IndexAny(s, ":#")
	p, suffix := s, ""
	if k >= 0 {
		p, suffix = s[:k], s[k:]
	}
	if suffix == "" {
		// A bare path at the end of a sentence: "see x.go."
		trimmed := strings.TrimRight(p, ".")
		suffix, p = p[len(trimmed):], trimmed
	}
	if !looksLikePath(p) {
		return ref{}, false
	}
	start, end, n := lineSuffix(suffix)
	return ref{path: p, start: start, end: end, rest: suffix[n:]}, true
}

// lineSuffix parses ":12", ":12-20", ":L12-L20", ":12:5" (Go's line:column)
// and "#L12-L20" at the start of s. n is 0 when there is none.
func lineSuffix(s string) (start, end, n int) {
	if len(s) < 2 {
		return 0, 0, 0
	}
	i := 1
	switch s[0] {
	case ':':
		if s[i] == 'L' {
			i++
		}
	case '#':
		if s[i] != 'L' {
			return 0, 0, 0
		}
		i++
	default:
		return 0, 0, 0
	}
	start, i, ok := digits(s, i)
	if !ok || start == 0 {
		return 0, 0, 0
	}
	end = start
	switch {
	case strings.HasPrefix(s[i:], "-") || strings.HasPrefix(s[i:], "–"):
		j := i + 1
		if s[i] != '-' {
			j = i + len("–")
		}
		if j < len(s) && s[j] == 'L' {
			j++
		}
		e, j, ok := digits(s, j)
		if !ok {
			return 0, 0, 0
		}
		end, i = e, j
	case s[0] == ':' && strings.HasPrefix(s[i:], ":"):
		if _, j, ok := digits(s, i+1); ok {
			i = j // a column: the line is what matters
		}
	}
	return start, end, i
}

func digits(s string, i int) (int, int, bool) {
	j := i
	for j < len(s) && j-i < 9 && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i || (j < len(s) && s[j] >= '0' && s[j] <= '9') {
		return 0, i, false
	}
	n, _ := strconv.Atoi(s[i:j])
	return n, j, true
}

// looksLikePath is the test that keeps prose, hosts and versions out:
// a slash, a known file extension, a dotfile or a well-known file name.
func looksLikePath(p string) bool {
	if p == "" || len(p) > 1024 || strings.ContainsAny(p, "\\% \t") || strings.Contains(p, "//") ||
		strings.HasPrefix(p, "~") || strings.HasPrefix(p, "@") && !strings.Contains(p, "/") {
		return false
	}
	q := p
	for strings.HasPrefix(q, "./") {
		q = q[2:]
	}
	q = strings.TrimLeft(q, "/")
	if q == "" || !strings.ContainsFunc(q, unicode.IsLetter) {
		return false
	}
	if strings.Contains(strings.TrimRight(q, "/"), "/") || strings.HasSuffix(q, "/") {
		return true
	}
	return knownFile(q)
}

// knownFile reports whether a name is clearly a file name even without a
// directory: it has a known extension, is a dotfile, or is a well-known
// extensionless file. Check also uses it to tell a hallucinated file from an
// import path such as net/http.
func knownFile(p string) bool {
	base := p[strings.LastIndexByte(strings.TrimRight(p, "/"), '/')+1:]
	if knownNames[strings.ToLower(base)] {
		return true
	}
	dot := strings.LastIndexByte(base, '.')
	if dot < 0 || dot == len(base)-1 {
		return false
	}
	if dot == 0 {
		return unicode.IsLetter(rune(base[1])) // .gitignore, .env
	}
	if knownNames[strings.ToLower(base[:dot])] { // Dockerfile.prod
		return true
	}
	return knownExt[strings.ToLower(base[dot+1:])]
}

var knownNames = setOf("makefile", "gnumakefile", "dockerfile", "containerfile", "jenkinsfile",
	"gemfile", "rakefile", "procfile", "vagrantfile", "justfile", "brewfile", "podfile",
	"license", "licence", "readme", "codeowners", "authors", "contributing", "changelog",
	"notice", "build", "workspace", "tiltfile", "caddyfile", "pipfile", "snakefile")

var knownExt = setOf(
	"go", "mod", "sum", "work", "py", "pyi", "pyx", "ipynb", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts",
	"rs", "java", "kt", "kts", "scala", "sc", "groovy", "gradle", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx",
	"inl", "ipp", "m", "mm", "cs", "fs", "fsx", "vb", "rb", "erb", "rake", "gemspec", "php", "swift", "dart", "lua",
	"pl", "pm", "t", "r", "jl", "ex", "exs", "erl", "hrl", "hs", "lhs", "ml", "mli", "clj", "cljs", "cljc", "edn",
	"el", "elm", "nim", "zig", "v", "sv", "svh", "vhd", "vhdl", "cu", "cuh", "cl", "f", "f90", "f95", "asm", "s",
	"sol", "move", "cairo", "sh", "bash", "zsh", "fish", "ps1", "psm1", "bat", "cmd", "vim", "awk", "sed",
	"sql", "prisma", "proto", "thrift", "avsc", "graphql", "gql", "yaml", "yml", "json", "jsonc", "json5",
	"toml", "ini", "cfg", "conf", "config", "properties", "env", "xml", "xsd", "xsl", "plist", "html", "htm",
	"xhtml", "css", "scss", "sass", "less", "styl", "vue", "svelte", "astro", "md", "mdx", "markdown", "rst",
	"txt", "adoc", "asciidoc", "org", "tex", "tf", "tfvars", "hcl", "nomad", "nix", "dhall", "cue", "jsonnet",
	"libsonnet", "rego", "bzl", "bazel", "star", "cmake", "mk", "mak", "ninja", "dockerfile", "tmpl", "tpl",
	"gotmpl", "gohtml", "j2", "jinja", "jinja2", "hbs", "mustache", "ejs", "pug", "liquid", "twig", "csv", "tsv",
	"svg", "lock", "patch", "diff", "http", "rest", "service", "socket", "timer", "desc", "golden", "snap",
	"tsbuildinfo", "csproj", "sln", "fsproj", "vcxproj", "pbxproj", "xcconfig", "storyboard", "xib", "gd",
	"wgsl", "glsl", "hlsl", "metal", "ll", "mlir", "pas", "pp", "ada", "adb", "ads", "cob", "cbl", "d", "cr",
	"raku", "rkt", "scm", "ss", "lisp", "lsp", "purs", "re", "rei", "res", "resi", "gleam", "odin", "hx", "pro",
)

func setOf(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// isRunRune reports whether r can be part of a path-like run in prose: path
// characters plus ":" and "#" for the line suffix and "\" so that a Windows
// path stays one run and is rejected whole.
func isRunRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
			strings.ContainsRune("_-./+@~%:#\\", r)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// takeRun returns the longest prefix of s made of run runes; an en dash
// between digits ("x.go:10–20") is part of it.
func takeRun(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '–' && i > 0 && isDigit(s[i-1]) && i+size < len(s) && (isDigit(s[i+size]) || s[i+size] == 'L') {
			i += size
			continue
		}
		if !isRunRune(r) || r == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			break // a Markdown escape ends the run: a/b.go:1\` is a/b.go:1
		}
		i += size
	}
	return s[:i]
}

func isASCIIPunct(b byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", b) >= 0
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
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
		if text[i] == '\\' && i+1 < len(text) && isASCIIPunct(text[i+1]) {
			i++
		}
		b.WriteByte(text[i])
	}
	return b.String()
}

// mdLink parses an inline link [text](dest) at the start of s, the way the
// Slack renderer does: nested brackets and parentheses balance, a backslash
// escapes. dest is the destination without a title or angle brackets.
func mdLink(s string) (text, dest string, n int, ok bool) {
	depth, closeText := 0, -1
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
		case '\\':
			i++
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
		}
	}
	return "", "", 0, false
}
