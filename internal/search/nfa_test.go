package search

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

func TestCompileNFA(t *testing.T) {
	tests := []struct {
		pattern string
		ok      bool
	}{
		{`[A-Z][a-z]+[0-9]{2,}`, true},
		{`\w+Error\(`, true},
		{`func \w+\(ctx`, true},
		{`(?i)parse[_-]?error`, true},
		{`a.*b`, true},
		{`^func [A-Z]\w*$`, true},
		{`größe`, true},     // UTF-8 literals are runs of bytes
		{`(?i)größe`, true}, // ö or Ö: two runs of bytes
		{`(?i)kind`, true},  // k, K or the Kelvin sign
		{`(?i)[a-z]+\d`, true},
		{`a.b`, false}, // a lone "." is one rune of 1–4 bytes
		{`a.+b`, false},
		{`[^a]b`, false}, // a negated class holds a million runes
		{`\pLx`, false},
		{`[a-zà-ÿ]x`, false}, // 32 non-ASCII runes: too many to spell out
		{`[a-zé]x`, true},
		{`\bword\b`, false},
		{`a^b`, false},
		{`[a-z]*`, false}, // matches the empty string, so every line
		{`^$`, false},
		{`[a-z]{70}`, false}, // more positions than bits
		{`\x{FFFD}x`, false}, // U+FFFD also matches invalid bytes
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			tree, err := syntax.Parse("(?m)"+tt.pattern, syntax.Perl)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := compileNFA(tree.Simplify()); ok != tt.ok {
				t.Errorf("compileNFA(%q) ok = %v, want %v", tt.pattern, ok, tt.ok)
			}
		})
	}
}

// TestNFAMatchesRegexp checks the automaton alone, line by line and over a
// whole buffer, against Go's regexp on random lines of code-like text.
func TestNFAMatchesRegexp(t *testing.T) {
	patterns := []string{
		`[A-Z][a-z]+[0-9]{2,}`, `\w+Error\(`, `(?i)parse[_-]?error`, `a.*b`, `^func [A-Z]\w*`, `\d+$`,
		`(foo|ba[rz])+\d`, `x(ab|a)*b`, `größe|é\w`, `^\s*//`, `[a-c]{2,4}z`, `(?i)kelvin`, `(?i)größe`,
		`(?i)[a-z]+\d`, `[xé]+`,
	}
	alphabet := []string{"a", "b", "x", "z", "A", "Z", "foo", "bar", "baz", "1", "23", "_", "-", " ", "\t",
		"Error(", "parse", "PARSE", "error", "func ", "//", "é", "É", "größe", "GRÖSSE", "GRÖßE", "\xff", "\xc3", "\r",
		"kelvin", "\u212aelvin", "\u017f", "\u212a"}
	r := rand.New(rand.NewPCG(7, 8))
	for _, p := range patterns {
		tree, err := syntax.Parse("(?m)"+p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := compileNFA(tree.Simplify())
		if !ok {
			t.Fatalf("compileNFA(%q) refused", p)
		}
		re := regexp.MustCompile("(?m)" + p)
		m := &Matcher{re: re, nfa: n}
		for range 300 {
			var lines []string
			for range r.IntN(6) {
				var b strings.Builder
				for range r.IntN(10) {
					b.WriteString(alphabet[r.IntN(len(alphabet))])
				}
				line := b.String()
				if got, want := n.matchLine([]byte(line)), re.MatchString(line); got != want {
					t.Fatalf("%q on line %q: automaton %v, regexp %v", p, line, got, want)
				}
				lines = append(lines, line)
			}
			buf := []byte(strings.Join(lines, "\n"))
			if got, want := engineLines(m, buf), plainLines(re, buf); !slicesEqual(got, want) {
				t.Fatalf("%q on %q: automaton lines %v, regexp lines %v", p, buf, got, want)
			}
		}
	}
}
