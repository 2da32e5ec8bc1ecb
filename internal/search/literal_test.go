package search

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"sync/atomic"
	"testing"
)

func TestExtractLiteral(t *testing.T) {
	tests := []struct {
		pattern string
		want    string // "" means no literal
		fold    bool
		whole   bool
	}{
		{pattern: `ContainerCreate`, want: "ContainerCreate", whole: true},
		{pattern: `\w+Error\(`, want: "Error("},
		{pattern: `func \(\w+ \*Daemon\) \w+`, want: " *Daemon) "}, // the longest required piece wins
		{pattern: `[A-Z][a-z]+[0-9]{2,}`},
		{pattern: `foo|bar`},
		{pattern: `(foo)?bar`, want: "bar"},
		{pattern: `(foo)*bar`, want: "bar"},
		{pattern: `(foo)+bar`, want: "foo"}, // both are required; ties keep the first
		{pattern: `(hello)+x`, want: "hello"},
		{pattern: `x(abc){2}`, want: "xabcabc", whole: true}, // simplified to x(abc)(abc)
		{pattern: `a.b`, want: "a"},
		{pattern: `^package main$`, want: "package main"},
		{pattern: `(?i)ContainerCreate`, want: "containercreate", fold: true, whole: true},
		{pattern: `(?i)kubernetes`, want: "ubernete", fold: true}, // k has a non-ASCII fold (U+212A)
		{pattern: `(?i)mass`, want: "ma", fold: true},             // s folds to ſ
		{pattern: `(?i)größe`, want: "gr", fold: true},            // non-ASCII is not searched folded
		{pattern: `größe`, want: "größe", whole: true},            // but is searched case-sensitively
		{pattern: `(?i)_-_`, want: "_-_", whole: true},            // caseless runes stay exact
		{pattern: `Foo(?i:bar)`, want: "foobar", fold: true},      // mixed: searched loosely, verified by the regexp
		{pattern: `a\x{FFFD}bcd`, want: "bcd"},                    // U+FFFD also matches invalid bytes
		{pattern: `foo\nbar`, want: "foo\nbar"},                   // never a whole-line literal
		{pattern: `\bword\b`, want: "word"},                       // assertions need the regexp
		{pattern: `(?:foo|foobar)baz`, want: "foo"},               // factored to foo(?:|bar)baz
		{pattern: `.*`},
		{pattern: `[ab]c`, want: "c"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			tree, err := syntax.Parse(tt.pattern, syntax.Perl)
			if err != nil {
				t.Fatal(err)
			}
			lit, ok := extractLiteral(tree.Simplify())
			if tt.want == "" {
				if ok {
					t.Fatalf("extractLiteral(%q) = %q, want none", tt.pattern, lit.text)
				}
				return
			}
			if !ok || string(lit.text) != tt.want || lit.fold != tt.fold || lit.whole != tt.whole {
				t.Errorf("extractLiteral(%q) = %q fold=%v whole=%v ok=%v, want %q fold=%v whole=%v",
					tt.pattern, lit.text, lit.fold, lit.whole, ok, tt.want, tt.fold, tt.whole)
			}
		})
	}
}

// plainLines is the reference: the regexp run on every line by itself.
func plainLines(re *regexp.Regexp, buf []byte) []int {
	var got []int
	if len(buf) == 0 {
		return got
	}
	lines := bytes.Split(bytes.TrimSuffix(buf, []byte{'\n'}), []byte{'\n'})
	for i, l := range lines {
		if re.Match(l) {
			got = append(got, i+1)
		}
	}
	return got
}

func engineLines(m *Matcher, buf []byte) []int {
	return engineLinesStoppable(m, buf, nil)
}

func engineLinesStoppable(m *Matcher, buf []byte, stop *atomic.Bool) []int {
	var got []int
	m.eachLine(buf, stop, func(ml matchLine) bool {
		got = append(got, bytes.Count(buf[:ml.start], []byte{'\n'})+1)
		return true
	})
	return got
}

// checkAgainstPlain fails if the engine (prefilter, whole-buffer scan)
// finds different lines than the plain per-line regexp.
func checkAgainstPlain(t *testing.T, pattern string, ignoreCase bool, buf []byte) {
	t.Helper()
	m, err := Compile(pattern, false, ignoreCase)
	if err != nil {
		return
	}
	ref := regexp.MustCompile(m.re.String())
	want, got := plainLines(ref, buf), engineLines(m, buf)
	if !slicesEqual(got, want) {
		t.Fatalf("pattern %q ignoreCase=%v (literal %q fold=%v whole=%v) on %q:\nengine lines %v\nplain lines  %v",
			pattern, ignoreCase, m.lit.text, m.lit.fold, m.lit.whole, buf, got, want)
	}
	// The same with a stop flag that is never set, in windows of a few
	// bytes and with every regexp call reading through a stoppableReader:
	// the machinery that lets a search stop must not change what it finds.
	small := *m
	small.directLen = 0
	var stop atomic.Bool
	for _, w := range []int{1, 3, 8} {
		small.window = w
		if got := engineLinesStoppable(&small, buf, &stop); !slicesEqual(got, want) {
			t.Fatalf("pattern %q ignoreCase=%v in windows of %d bytes, through a reader, on %q:\nengine lines %v\nplain lines  %v",
				pattern, ignoreCase, w, buf, got, want)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSearchMatchesPlainRegexp is the property behind the prefilter: on
// random texts built from an alphabet that provokes the edge cases (case
// variants, the Kelvin sign and long s, invalid UTF-8, newlines, \r), the
// engine finds exactly the lines a plain per-line regexp finds.
func TestSearchMatchesPlainRegexp(t *testing.T) {
	patterns := []string{
		`ab`, `abc`, `Error\(`, `\w+Error\(`, `a.c`, `a\sb`, `a[^x]b`, `^ab`, `ab$`, `^$`, `x*`,
		`\bab\b`, `a\nb`, `(ab)+c`, `(?:ab|abc)d`, `[A-Z][a-z]+[0-9]{2,}`, `k`, `sk`, `ks\w`,
		`e\x{FFFD}`, `\x{FFFD}`, `[0-9][0-9]`, `\d\d+x`, `[xy]z+[0-9]{2}`, `(?i)k[0-9]{2}`, `[a-c]1[2-3]+`, `\s\d\d`, `é`, `ÉA`, `\r`, `b\r$`, `.`, `(a|b)c+`, `S.K`, `Ab[Cc]`, `\s+$`,
		// Run by the byte automaton (nfa.go), with and without a prefilter.
		`[a-c]+[0-9]`, `[ab]|[0-9]{2}`, `a.*b`, `(?s)a.*c`, `.*é.*`, `é+A`, `^[a-c]+$`, `^\w+`, `\w+$`,
		`\s\w`, `(a|bc)*1`, `[A-Z][a-z]+`, `(?i)[a-c]e`, `(?i)é`, `(?i)a[0-9]?c`, `A\d*$`, `^(ab|c)`, `a.*\x{FFFD}`,
		`[^a]b`, `a.b`, `a.+b`, `\r$`, `x|`, `\x{212A}`, `\z`, `\Aa`, `b\z`, `(?s).\z`,
	}
	alphabet := []string{"a", "b", "c", "A", "B", "C", "k", "K", "\u212a", "s", "S", "\u017f", "E", "e", "é", "É",
		"rror(", "Error(", "x", "1", "23", " ", "\t", "\n", "\n", "\r\n", "\xff", "\xc3", "_"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 800 {
		var buf []byte
		for range r.IntN(40) {
			buf = append(buf, alphabet[r.IntN(len(alphabet))]...)
		}
		for _, p := range patterns {
			checkAgainstPlain(t, p, false, buf)
			checkAgainstPlain(t, p, true, buf)
		}
	}
}

// FuzzSearchMatchesPlainRegexp explores patterns too: any pattern Go
// accepts must give the same lines through the engine as per line.
func FuzzSearchMatchesPlainRegexp(f *testing.F) {
	f.Add(`\w+Error\(`, "x FooError(1)\nbar\n", false)
	f.Add(`(?:foo|foobar)baz`, "foobarbaz\nfoobaz\n", true)
	f.Add(`kelvin`, "\u212aelvin\nKELVIN\n", true)
	f.Add(`a\sb`, "a\nb\na b\n", false)
	f.Fuzz(func(t *testing.T, pattern, text string, ignoreCase bool) {
		checkAgainstPlain(t, pattern, ignoreCase, []byte(text))
	})
}

func TestFoldFinder(t *testing.T) {
	tests := []struct {
		buf, lit string
		want     []int
	}{
		{"xxABcab aBC", "abc", []int{2, 8}},
		{"abc", "abc", []int{0}},
		{"ab", "abc", nil},
		{"zzzzQzq", "zq", []int{3, 5}},
		{"a_b A_B", "a_b", []int{0, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.buf, func(t *testing.T) {
			ff := newFoldFinder([]byte(tt.buf), []byte(tt.lit), rarestByte([]byte(tt.lit)))
			var got []int
			for p := ff.next(0); p >= 0; p = ff.next(p + 1) {
				got = append(got, p)
			}
			if !slicesEqual(got, tt.want) {
				t.Errorf("fold search for %q in %q = %v, want %v", tt.lit, tt.buf, got, tt.want)
			}
		})
	}
}

// RequiredLiterals gives an index what the prefilter searches for, after
// the flags search_code adds: literal=true quotes the pattern, ignore_case
// folds it.
func TestRequiredLiterals(t *testing.T) {
	tests := []struct {
		pattern         string
		literal, ignore bool
		want            string // "" means none
		fold            bool
	}{
		{pattern: `NewServer(`, literal: true, want: "NewServer("},
		{pattern: `\w+Error\(`, want: "Error("},
		{pattern: `NewServer`, ignore: true, want: "erver", fold: true}, // s folds to ſ
		{pattern: `[A-Z][a-z]+\(`, want: "("},                           // too short for an index, which says so
		{pattern: `foo|bar`},
		{pattern: `.*`},
	}
	for _, tc := range tests {
		m, err := Compile(tc.pattern, tc.literal, tc.ignore)
		if err != nil {
			t.Fatal(err)
		}
		lits, fold, ok := m.RequiredLiterals()
		got := ""
		if ok {
			got = lits[0]
		}
		if got != tc.want || fold != tc.fold || ok != (tc.want != "") {
			t.Errorf("RequiredLiterals(%q) = %q, %v, %v; want %q, %v", tc.pattern, lits, fold, ok, tc.want, tc.fold)
		}
	}
}
