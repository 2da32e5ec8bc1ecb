package index

import (
	"slices"
)

// The text index is of trigrams with ASCII letters folded to lower case,
// one index for both exact and case-insensitive queries: a file holding
// "Foo" holds the folded trigram "foo", so the files listed under the
// folded trigrams of a literal are a superset of those holding it, either
// way. (The search's case-insensitive mode folds ASCII only, as this does.)

func fold(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func gram(a, b, c byte) uint32 {
	return uint32(fold(a))<<16 | uint32(fold(b))<<8 | uint32(fold(c))
}

// gramSet is a bitmap of every trigram, to collect a file's distinct
// ones without sorting every position: 2 MiB, one per worker, cleared
// after each file by the trigrams it set.
type gramSet []uint64

func newGramSet() gramSet { return make(gramSet, 1<<24/64) }

// fileGrams appends the distinct folded trigrams of content to dst,
// sorted.
func (s gramSet) fileGrams(content []byte, dst []uint32) []uint32 {
	start := len(dst)
	for i := 0; i+2 < len(content); i++ {
		g := gram(content[i], content[i+1], content[i+2])
		w, bit := g>>6, uint64(1)<<(g&63)
		if s[w]&bit == 0 {
			s[w] |= bit
			dst = append(dst, g)
		}
	}
	for _, g := range dst[start:] {
		s[g>>6] = 0
	}
	slices.Sort(dst[start:])
	return dst
}

// litGrams returns the folded trigrams of a literal, sorted and distinct.
func litGrams(lit string) []uint32 {
	var out []uint32
	for i := 0; i+2 < len(lit); i++ {
		out = append(out, gram(lit[i], lit[i+1], lit[i+2]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
