package tools

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// TestDenyDefaultsCompareAsStrings keeps the default deny-list on the fast
// path: a pattern that falls back to a glob costs every listed path about
// 100ns per path element.
func TestDenyDefaultsCompareAsStrings(t *testing.T) {
	d := mustDeny(t, DefaultDeny)
	for _, p := range d {
		if p.kind == denyGlob {
			t.Errorf("default pattern %q is matched as a glob; keep defaults to a name or one \"*\"", p.glob)
		}
	}
}

func TestClassifyGlob(t *testing.T) {
	tests := []struct {
		glob           string
		kind           denyKind
		prefix, suffix string
	}{
		{".env", denyExact, ".env", ""},
		{".env.*", denyAffix, ".env.", ""},
		{"*.pem", denyAffix, "", ".pem"},
		{"credentials*.json", denyAffix, "credentials", ".json"},
		{"config/*.pem", denyAffix, "config/", ".pem"},
		{"*", denyAffix, "", ""},
		{"**/x", denyTail, "", "x"},
		{"**/.kube/config", denyTail, "", ".kube/config"},
		{"**/x*", denyGlob, "", ""},
		{"**/**/x", denyGlob, "", ""},
		{"a/**/x", denyGlob, "", ""},
		{"**//x", denyGlob, "", ""},
		{"a*b*c", denyGlob, "", ""},
		{"id_?sa", denyGlob, "", ""},
		{"[ab].key", denyGlob, "", ""},
		{"{a,b}.key", denyGlob, "", ""},
		{`\*.key`, denyGlob, "", ""},
		{"a*\xff", denyGlob, "", ""}, // doublestar reads invalid bytes as U+FFFD
		{"a*\uFFFD", denyGlob, "", ""},
	}
	for _, tt := range tests {
		kind, prefix, suffix := classifyGlob(tt.glob)
		if kind != tt.kind || prefix != tt.prefix || suffix != tt.suffix {
			t.Errorf("classifyGlob(%q) = %v %q %q, want %v %q %q", tt.glob, kind, prefix, suffix, tt.kind, tt.prefix, tt.suffix)
		}
	}
}

// checkDenyMatch fails if the string comparison chosen for glob answers
// differently from doublestar, which defines the semantics.
func checkDenyMatch(t *testing.T, glob, s string) {
	t.Helper()
	if !doublestar.ValidatePattern(glob) {
		return
	}
	p := denyPattern{glob: glob}
	p.kind, p.prefix, p.suffix = classifyGlob(glob)
	want := doublestar.MatchUnvalidated(glob, s)
	if got := p.matches(s); got != want {
		t.Fatalf("pattern %q (kind %v) on %q: %v, doublestar says %v", glob, p.kind, s, got, want)
	}
}

// TestDenyMatchesLikeDoublestar is the property behind the fast path: on
// random names built from pieces of the patterns, slashes, dots, non-ASCII
// and invalid UTF-8, every pattern answers exactly as doublestar.
func TestDenyMatchesLikeDoublestar(t *testing.T) {
	globs := append([]string{"config/*.pem", "*", "a*", "*a", "a*a", "aa", "a/*", "*/a", "é*", "*\xff", "**/a", "**/a/b", "**/.env", "**/é"}, DefaultDeny...)
	pieces := []string{"a", "b", "/", ".", "env", ".env", "pem", "id_rsa", "credentials", ".json", "config", "é", "\xff", "\xc3", "*", ""}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		for _, g := range globs {
			checkDenyMatch(t, strings.TrimPrefix(strings.TrimSuffix(g, "/"), "!"), b.String())
		}
	}
}

func FuzzDenyMatchesLikeDoublestar(f *testing.F) {
	f.Add("credentials*.json", "credentials-prod.json")
	f.Add("config/*.pem", "config/x/y.pem")
	f.Add(".env.*", ".env.")
	f.Add("*é", "\xc3é")
	f.Add("**/.kube/config", "a/.kube/config")
	f.Fuzz(func(t *testing.T, glob, s string) {
		checkDenyMatch(t, glob, s)
	})
}

// TestDenyLastMatchWins covers the order of patterns, which the matcher
// scans from the end.
func TestDenyLastMatchWins(t *testing.T) {
	checkDenied(t, []denyCase{
		{[]string{"*.pem", "!test.pem"}, "test.pem", false},
		{[]string{"!test.pem", "*.pem"}, "test.pem", true},
		{[]string{"*.pem", "!test.pem", "test*"}, "test.pem", true},
		{[]string{"secrets/", "!secrets/ok.txt"}, "secrets/ok.txt", true}, // the directory itself stays denied
		{[]string{".git/"}, "a/.git/config", true},
		{[]string{".git/"}, "a/.github/x", false},
		{[]string{"config/*.pem"}, "config/a/b.pem", false},
		{[]string{"config/*.pem"}, "config/b.pem", true},
	})
}

// BenchmarkDenied matches typical paths of a Go tree against the default
// deny-list, as a listing does for every file.
func BenchmarkDenied(b *testing.B) {
	d := mustDeny(b, DefaultDeny)
	paths := []string{
		"net/http/server.go", "cmd/compile/internal/ssa/rewriteAMD64.go", "README.md",
		"crypto/tls/testdata/example-key.pem", "go/types/testdata/local/issue47996.go",
	}
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				d.denied(p)
			}
		}
	})
	b.Run("index", func(b *testing.B) {
		idx := newDenyIndex(d)
		for b.Loop() {
			for _, p := range paths {
				idx.denied(p)
			}
		}
	})
}

// TestDenyIndexAgreesWithList checks the byte-table filter never drops a
// pattern that matches: on random pattern lists (names, affixes, globs,
// anchored, negated, directories) and random paths, the index answers
// exactly as the plain list.
func TestDenyIndexAgreesWithList(t *testing.T) {
	pool := append([]string{
		"config/*.pem", "!config/dev.pem", "secrets/", "!keep*", "*", "a*", "*a", "[ab]*.key", "{x,y}",
		"**/deep/*.txt", "/rooted", "d/", "!*.env", "é*", "*é", "a/b", "Keep*", "*.Pem", "**/.kube/config", "kelvin*",
	}, DefaultDeny...)
	pieces := []string{"a", "b", "x", "/", ".", ".env", ".pem", ".key", "config", "secrets", "deep", "keep", "dev",
		"rooted", "id_rsa", ".txt", "é", "\xff", "d", ".git", "credentials", ".json",
		"A", "D", ".ENV", ".PEM", "Config", "É", "\u212A", ".kube", "CONFIG", ".Docker", "config.json"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 300 {
		var patterns []string
		for range r.IntN(12) {
			patterns = append(patterns, pool[r.IntN(len(pool))])
		}
		d := mustDeny(t, patterns)
		idx := newDenyIndex(d)
		for range 100 {
			var b strings.Builder
			for range 1 + r.IntN(6) {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			p := strings.Trim(b.String(), "/")
			if got, want := idx.denied(p), d.denied(p); got != want {
				t.Fatalf("patterns %q, path %q: index says %v, list says %v", patterns, p, got, want)
			}
		}
	}
}

// TestDenyIndexManyPatterns covers lists longer than the index's bit mask.
func TestDenyIndexManyPatterns(t *testing.T) {
	var patterns []string
	for i := range 70 {
		patterns = append(patterns, "f"+strings.Repeat("x", i))
	}
	patterns = append(patterns, "!fxx")
	d := mustDeny(t, patterns)
	idx := newDenyIndex(d)
	for _, tt := range []struct {
		path   string
		denied bool
	}{{"a/f", true}, {"a/" + "f" + strings.Repeat("x", 69), true}, {"fxx", false}, {"g", false}} {
		if got := idx.denied(tt.path); got != tt.denied {
			t.Errorf("denied(%q) = %v, want %v", tt.path, got, tt.denied)
		}
	}
}

// mustDeny parses a deny-list that is known to be good.
func mustDeny(t testing.TB, patterns []string) denyList {
	t.Helper()
	d, err := parseDeny(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// denyCase is a deny-list, a path, and whether the list denies it.
type denyCase struct {
	patterns []string
	path     string
	denied   bool
}

// checkDenied asks both matchers, the list and its index, about each case.
func checkDenied(t *testing.T, cases []denyCase) {
	t.Helper()
	for _, tt := range cases {
		d := mustDeny(t, tt.patterns)
		if got := d.denied(tt.path); got != tt.denied {
			t.Errorf("%q denied(%q) = %v, want %v", tt.patterns, tt.path, got, tt.denied)
		}
		if got := newDenyIndex(d).denied(tt.path); got != tt.denied {
			t.Errorf("%q index denied(%q) = %v, want %v", tt.patterns, tt.path, got, tt.denied)
		}
	}
}
