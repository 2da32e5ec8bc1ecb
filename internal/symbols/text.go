package symbols

import (
	"bytes"
	"path"
	"strings"
)

// Words returns the identifier-like words of a file in another language
// than Go ([A-Za-z_$][A-Za-z0-9_$]*, at least two bytes), one per name and
// line, in line order. Without a parser for the language, comments and
// strings count too: these are name matches, not resolved references.
// defs marks the lines where a word is defined (name → lines).
func Words(src []byte, defs []Symbol) []Ident {
	isDef := map[Ident]bool{}
	for _, s := range defs {
		isDef[Ident{Name: s.Name, Line: s.Line}] = true
	}
	var ids []Ident
	seen := map[string]bool{}
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		if c == '\n' {
			line++
			clear(seen)
			i++
			continue
		}
		if !wordStart(c) {
			i++
			continue
		}
		j := i + 1
		for j < len(src) && (wordStart(src[j]) || '0' <= src[j] && src[j] <= '9') {
			j++
		}
		// A word glued to a non-ASCII letter is part of a longer word.
		if j-i >= 2 && (i == 0 || src[i-1] < 0x80) && (j == len(src) || src[j] < 0x80) {
			w := string(src[i:j])
			if !seen[w] {
				seen[w] = true
				ids = append(ids, Ident{Name: w, Line: line, Def: isDef[Ident{Name: w, Line: line}]})
			}
		}
		i = j
	}
	return ids
}

func wordStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$'
}

// IsTestPath says whether path looks like a test file in common
// conventions: Go's _test.go, test_x.py, x_test.py, x.test.js, x.spec.ts,
// XTest.java, or anything under a test or tests directory.
func IsTestPath(p string) bool {
	base := path.Base(p)
	stem := strings.TrimSuffix(base, path.Ext(base))
	lower := strings.ToLower(stem)
	switch {
	case strings.HasPrefix(lower, "test_"), strings.HasSuffix(lower, "_test"), strings.HasSuffix(lower, "_spec"),
		strings.HasSuffix(lower, ".test"), strings.HasSuffix(lower, ".spec"),
		strings.HasSuffix(stem, "Test"), strings.HasSuffix(stem, "Tests"):
		return true
	}
	for dir := range strings.SplitSeq(path.Dir(p), "/") {
		switch strings.ToLower(dir) {
		case "test", "tests", "__tests__", "spec", "testdata":
			return true
		}
	}
	return false
}

// looksGenerated says whether a file marks itself generated in its first
// lines: Go's "Code generated … DO NOT EDIT." in any comment syntax, or
// "@generated".
func looksGenerated(src []byte) bool {
	head := src[:min(len(src), 1024)]
	return bytes.Contains(head, []byte("@generated")) ||
		bytes.Contains(head, []byte("Code generated")) && bytes.Contains(head, []byte("DO NOT EDIT"))
}

// commentAbove is the first line of the comment block right above line n
// (#, //, --, ;, /* and * lines), without its markers, or "".
func commentAbove(src []byte, starts []int, n int) string {
	first := ""
	for k := n - 1; k >= 1 && k >= n-20; k-- {
		t := strings.TrimSpace(lineText(src, starts, k))
		stripped, ok := stripComment(t)
		if !ok {
			break
		}
		if stripped != "" {
			first = stripped
		}
	}
	return clip(first)
}

func stripComment(t string) (string, bool) {
	for _, m := range []string{"///", "//", "#", "--", ";;", ";", "/**", "/*", "*/", "*"} {
		if strings.HasPrefix(t, m) {
			t = strings.TrimPrefix(t, m)
			t = strings.TrimSuffix(strings.TrimSpace(t), "*/")
			return strings.TrimSpace(t), true
		}
	}
	return "", false
}
