package search

import (
	"bytes"
)

// foldFinder finds an ASCII literal case-insensitively. Go has no SIMD
// search for "either of two bytes", so it keeps the next position of the
// anchor byte's lower- and upper-case forms, each found with IndexByte, and
// only re-searches the one that was passed. That keeps a rare upper-case
// form from being rescanned on every hit of the common lower-case one.
type foldFinder struct {
	buf            []byte
	lit            []byte // lower case
	anchor         int
	lo, up         byte
	nextLo, nextUp int // -1: not yet known; len(buf): none left
}

func newFoldFinder(buf, lit []byte, anchor int) foldFinder {
	lo := lit[anchor]
	up := lo
	if 'a' <= lo && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	return foldFinder{buf: buf, lit: lit, anchor: anchor, lo: lo, up: up, nextLo: -1, nextUp: -1}
}

// next returns the first offset at or after from where the literal occurs,
// or -1.
func (f *foldFinder) next(from int) int {
	n := len(f.lit)
	last := len(f.buf) - n
	for from <= last {
		p := f.nextAnchor(from + f.anchor)
		if p < 0 || p-f.anchor > last {
			return -1
		}
		s := p - f.anchor
		if equalFoldASCII(f.buf[s:s+n], f.lit) {
			return s
		}
		from = s + 1
	}
	return -1
}

func (f *foldFinder) nextAnchor(from int) int {
	f.nextLo = f.advance(f.nextLo, from, f.lo)
	p := f.nextLo
	if f.up != f.lo {
		f.nextUp = f.advance(f.nextUp, from, f.up)
		p = min(p, f.nextUp)
	}
	if p >= len(f.buf) {
		return -1
	}
	return p
}

func (f *foldFinder) advance(cached, from int, c byte) int {
	if cached >= from {
		return cached
	}
	if i := bytes.IndexByte(f.buf[from:], c); i >= 0 {
		return from + i
	}
	return len(f.buf)
}

// equalFoldASCII reports whether s equals the lower-case ASCII lit, ignoring
// ASCII case.
func equalFoldASCII(s, lit []byte) bool {
	for i, c := range s {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lit[i] {
			return false
		}
	}
	return true
}

// rarestByte picks the byte of a lower-case literal whose two case forms
// together are least frequent (see byteFreq): fewer false starts to check.
func rarestByte(lit []byte) int {
	best, bestFreq := 0, -1
	for i, c := range lit {
		f := int(byteFreq[c])
		if 'a' <= c && c <= 'z' {
			f += int(byteFreq[c-'a'+'A'])
		}
		if bestFreq < 0 || f < bestFreq {
			best, bestFreq = i, f
		}
	}
	return best
}
