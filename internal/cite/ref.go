package cite

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/mdscan"
)

// This file reads one citation: a path and the line range after it, and
// the tests that tell a path from prose, hosts and versions.

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
		if !isRunRune(r) || r == '\\' && i+1 < len(s) && mdscan.IsASCIIPunct(s[i+1]) {
			break // a Markdown escape ends the run: a/b.go:1\` is a/b.go:1
		}
		i += size
	}
	return s[:i]
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func isLetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }
