package tools

import (
	"regexp/syntax"
	"testing"
)

func TestExtractClassSeq(t *testing.T) {
	tests := []struct {
		pattern string
		want    string // the run as byte-set members, "" for none
	}{
		{pattern: `[A-Z][a-z]+[0-9]{2,}`, want: "[a-z][0-9][0-9]"}, // the plus joins its neighbours
		{pattern: `\d\d`, want: "[0-9][0-9]"},
		{pattern: `[0-9]`},                   // one digit is too common to pay off
		{pattern: `[a-z]+`},                  // so are letters
		{pattern: `x[^a]yz`, want: "[y][z]"}, // [^a] includes non-ASCII and breaks the run
		{pattern: `(?i)q[0-9]`, want: "[Qq][0-9]"},
		{pattern: `(?i)k[0-9][0-9]`, want: "[0-9][0-9]"}, // k folds to the 3-byte Kelvin sign
		{pattern: `[0-9]|[0-9][0-9]`},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			tree, err := syntax.Parse(tt.pattern, syntax.Perl)
			if err != nil {
				t.Fatal(err)
			}
			cs, ok := extractClassSeq(tree.Simplify())
			got := ""
			if ok {
				got = describeSets(cs.sets)
			}
			if got != tt.want {
				t.Errorf("extractClassSeq(%q) = %q, want %q", tt.pattern, got, tt.want)
			}
		})
	}
}

// describeSets writes each set as [..] with ranges collapsed: [0-9][Qq].
func describeSets(sets []*byteSet) string {
	var out []byte
	for _, s := range sets {
		out = append(out, '[')
		for b := 0; b < 256; b++ {
			if !s[b] {
				continue
			}
			e := b
			for e+1 < 256 && s[e+1] {
				e++
			}
			out = append(out, byte(b))
			if e > b+1 {
				out = append(out, '-', byte(e))
			} else if e == b+1 {
				out = append(out, byte(e))
			}
			b = e
		}
		out = append(out, ']')
	}
	return string(out)
}
