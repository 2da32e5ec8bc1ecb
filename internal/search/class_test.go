package search

import (
	"math/rand/v2"
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

// TestBetween checks the word test against a byte comparison for every
// byte value in every lane, for bounds around the ranges that occur.
func TestBetween(t *testing.T) {
	bounds := [][2]uint64{{0x2f, 0x3a}, {0x40, 0x5b}, {0x60, 0x7b}, {0, 128}, {0, 2}, {126, 128}, {0x41, 0x43}}
	for _, mn := range bounds {
		m, n := mn[0], mn[1]
		for b := range 256 {
			for lane := range 8 {
				// The other lanes hold bytes that could carry or borrow.
				x := uint64(0xff80007f01fe40ff)
				x &^= 0xff << (8 * lane)
				x |= uint64(b) << (8 * lane)
				got := between(x, m, n)>>(8*lane+7)&1 == 1
				if want := uint64(b) > m && uint64(b) < n; got != want {
					t.Fatalf("between(%#x, %d, %d) lane %d = %v, want %v", x, m, n, lane, got, want)
				}
			}
		}
	}
}

// TestClassSeqNext checks both scans (a pair of ranges eight bytes at a
// time, and byte by byte) against a plain search, on random buffers.
func TestClassSeqNext(t *testing.T) {
	patterns := []struct {
		pattern string
		pair    bool
	}{
		{`[A-Z][a-z]+[0-9]{2,}`, true}, // [0-9][0-9]
		{`\d\d`, true},
		{`x[0-9][0-9]`, true},
		{`[0-9][Qq][0-9]`, false}, // no two adjacent ranges: byte by byte
		{`q[0-9][a-c]_z`, true},
		{`(?i)q[0-9][a-c]_z`, false}, // [A-Ca-c] is two ranges, [Zz] too
	}
	alphabet := []byte("aqQxz_09135AZ \n\xff\x80")
	r := rand.New(rand.NewPCG(9, 10))
	for _, tt := range patterns {
		p := tt.pattern
		tree, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		cs, ok := extractClassSeq(tree.Simplify())
		if !ok {
			t.Fatalf("no class run in %q", p)
		}
		if cs.pair.ok != tt.pair {
			t.Errorf("%q: pair scan %v, want %v", p, cs.pair.ok, tt.pair)
		}
		for range 2000 {
			buf := make([]byte, r.IntN(40))
			for i := range buf {
				buf[i] = alphabet[r.IntN(len(alphabet))]
			}
			from := r.IntN(len(buf) + 1)
			want := -1
			for s := from; s+len(cs.sets) <= len(buf); s++ {
				if cs.matchAt(buf, s) {
					want = s
					break
				}
			}
			if got := cs.next(buf, from); got != want {
				t.Fatalf("%q (pair %v) in %q from %d: next = %d, want %d", p, cs.pair.ok, buf, from, got, want)
			}
			if got := cs.nextByte(buf, from); got != want {
				t.Fatalf("%q in %q from %d: nextByte = %d, want %d", p, buf, from, got, want)
			}
		}
	}
}
