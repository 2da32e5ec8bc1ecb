package search

import (
	"bytes"
	"math/bits"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// After a prefilter, Go's regexp still has to confirm each candidate line,
// and its backtracker costs about 100ns per line plus several ns per byte:
// for [A-Z][a-z]+[0-9]{2,} over the Go tree, 200k candidate lines took two
// thirds of the search. Most patterns a model writes are built from
// single-byte classes ([a-z], \w, \d, ASCII letters, under (?i) too), UTF-8
// literals, repetition and alternation. Those compile here into a Glushkov
// automaton of at most 64 positions, run bit-parallel: the set of live
// positions is one uint64, and a step is a table lookup per 8 positions and
// two ANDs. That confirms a line in a few ns per byte, and with no literal or
// class run to prefilter on it scans whole files four to five times faster
// than the regexp pass it replaces (BenchmarkSearchEngine/no-prefilter).
//
// It answers only "does this line match", never where, and it must agree
// with the regexp exactly, so it accepts only what it can run byte by byte
// with the same result. Every atom is either one ASCII byte from a set, a
// few non-ASCII runes (each its UTF-8 bytes in a row: é, or the Kelvin sign
// that (?i)k also matches), or ".*". An ASCII byte or a UTF-8 lead byte
// always starts a rune when Go decodes a line, so atoms of the first two
// kinds sit on the same boundaries in bytes as in runes; ".*" covers
// whatever lies between two boundaries, which is always a whole number of
// runes. Classes with many non-ASCII members ([^a], \pL), U+FFFD (which the
// regexp matches against any invalid byte), a lone ".", "\b", "^" or "$"
// anywhere but at the ends, patterns that can match the empty string, and
// patterns over 64 positions are left to the regexp.

// maxNFAPositions is the width of the state word.
const maxNFAPositions = 64

// byteNFA is a compiled pattern. It is immutable and safe for concurrent
// use.
type byteNFA struct {
	// sets[c] has bit p when position p accepts byte c. No set holds
	// '\n', so a line break kills every live position: scanning a whole
	// buffer matches line by line, as the regexp does in eachLine.
	sets        [256]uint64
	first, last uint64
	// start[c] is first & sets[c]: the positions a match can begin at
	// with byte c.
	start [256]uint64
	// follow[k][b] is the union of the follow sets of the positions in
	// bits 8k..8k+7 that are set in b.
	follow [][256]uint64
	// anchorStart ("^...") starts positions only at a line start;
	// anchorEnd ("...$") accepts only at a line end.
	anchorStart, anchorEnd bool
}

// glushkov builds the automaton: positions, each with a byte set, and for
// each position the positions that may come next.
type glushkov struct {
	sets    []byteSet
	follows []uint64
}

// fragment is what a node contributes: the positions a match of it may
// start and end at, and whether it matches the empty string.
type fragment struct {
	first, last uint64
	nullable    bool
}

// compileNFA returns the automaton for a parsed, simplified pattern, or
// ok=false when the pattern uses something it cannot run exactly.
func compileNFA(re *syntax.Regexp) (*byteNFA, bool) {
	n := &byteNFA{}
	// Peel "^" and "$" off the ends of a top-level concatenation.
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op == syntax.OpConcat && len(re.Sub) > 1 {
		subs := re.Sub
		if subs[0].Op == syntax.OpBeginLine {
			n.anchorStart, subs = true, subs[1:]
		}
		if len(subs) > 0 && subs[len(subs)-1].Op == syntax.OpEndLine {
			n.anchorEnd, subs = true, subs[:len(subs)-1]
		}
		re = &syntax.Regexp{Op: syntax.OpConcat, Sub: subs, Flags: re.Flags}
	}
	var g glushkov
	f, ok := g.build(re)
	if !ok || f.nullable || len(g.sets) == 0 {
		return nil, false
	}
	for p, s := range g.sets {
		for c, in := range s {
			if in && c != '\n' {
				n.sets[c] |= 1 << p
			}
		}
	}
	n.first, n.last = f.first, f.last
	for c := range n.start {
		n.start[c] = n.first & n.sets[c]
	}
	n.follow = make([][256]uint64, (len(g.sets)+7)/8)
	for k := range n.follow {
		for b := range 256 {
			var u uint64
			for i := range 8 {
				if p := 8*k + i; b&(1<<i) != 0 && p < len(g.follows) {
					u |= g.follows[p]
				}
			}
			n.follow[k][b] = u
		}
	}
	return n, true
}

// maxClassRunes bounds the non-ASCII runes a class may have (under (?i),
// [a-z] has two: U+017F and U+212A); each becomes a run of positions.
const maxClassRunes = 8

// runes returns the fragment matching any one of runes: the ASCII ones as a
// single position, each other rune as its UTF-8 bytes in a row. U+FFFD is
// refused since the regexp also matches it against any invalid byte.
func (g *glushkov) runes(runes []rune) (fragment, bool) {
	var ascii byteSet
	var hasASCII bool
	var f fragment
	wide := 0
	for _, r := range runes {
		if r < utf8.RuneSelf {
			ascii[r], hasASCII = true, true
			continue
		}
		if wide++; wide > maxClassRunes || r == utf8.RuneError || !utf8.ValidRune(r) {
			return fragment{}, false
		}
		seq := fragment{nullable: true}
		for _, b := range utf8.AppendRune(nil, r) {
			var one byteSet
			one[b] = true
			bit, ok := g.position(one)
			if !ok {
				return fragment{}, false
			}
			seq = g.sequence(seq, fragment{first: bit, last: bit})
		}
		f.first |= seq.first
		f.last |= seq.last
	}
	if hasASCII {
		bit, ok := g.position(ascii)
		if !ok {
			return fragment{}, false
		}
		f.first |= bit
		f.last |= bit
	}
	return f, f.first != 0
}

// position adds one position accepting set and returns its bit.
func (g *glushkov) position(set byteSet) (uint64, bool) {
	if len(g.sets) == maxNFAPositions {
		return 0, false
	}
	g.sets = append(g.sets, set)
	g.follows = append(g.follows, 0)
	return 1 << (len(g.sets) - 1), true
}

// link makes every position in from followable by every position in to.
func (g *glushkov) link(from, to uint64) {
	for from != 0 {
		p := bits.TrailingZeros64(from)
		from &^= 1 << p
		g.follows[p] |= to
	}
}

// sequence returns the fragment of a followed by b.
func (g *glushkov) sequence(a, b fragment) fragment {
	g.link(a.last, b.first)
	f := fragment{first: a.first, last: b.last, nullable: a.nullable && b.nullable}
	if a.nullable {
		f.first |= b.first
	}
	if b.nullable {
		f.last |= a.last
	}
	return f
}

func (g *glushkov) build(re *syntax.Regexp) (fragment, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return fragment{nullable: true}, true
	case syntax.OpLiteral:
		return g.literal(re)
	case syntax.OpCharClass:
		return g.charClass(re)
	case syntax.OpCapture:
		return g.build(re.Sub[0])
	case syntax.OpConcat:
		f := fragment{nullable: true}
		for _, sub := range re.Sub {
			sf, ok := g.build(sub)
			if !ok {
				return fragment{}, false
			}
			f = g.sequence(f, sf)
		}
		return f, true
	case syntax.OpAlternate:
		var f fragment
		for _, sub := range re.Sub {
			sf, ok := g.build(sub)
			if !ok {
				return fragment{}, false
			}
			f.first |= sf.first
			f.last |= sf.last
			f.nullable = f.nullable || sf.nullable
		}
		return f, true
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		sub := re.Sub[0]
		if sub.Op == syntax.OpAnyCharNotNL || sub.Op == syntax.OpAnyChar {
			// Only ".*": any run of bytes between two rune boundaries
			// is a run of runes. ".+" and ".?" would count bytes.
			if re.Op != syntax.OpStar {
				return fragment{}, false
			}
			var s byteSet
			for c := range s {
				s[c] = true
			}
			bit, ok := g.position(s)
			g.link(bit, bit)
			return fragment{first: bit, last: bit, nullable: true}, ok
		}
		f, ok := g.build(sub)
		if !ok {
			return fragment{}, false
		}
		if re.Op != syntax.OpQuest {
			g.link(f.last, f.first)
		}
		f.nullable = f.nullable || re.Op != syntax.OpPlus
		return f, true
	}
	// Assertions inside the pattern, ".", non-ASCII classes, OpRepeat
	// (Simplify expands it), and anything else.
	return fragment{}, false
}

// literal builds the sequence of re's runes, each with its case forms
// when re folds case.
func (g *glushkov) literal(re *syntax.Regexp) (fragment, bool) {
	f := fragment{nullable: true}
	for _, r := range re.Rune {
		runes := []rune{r}
		if re.Flags&syntax.FoldCase != 0 {
			for o := unicode.SimpleFold(r); o != r; o = unicode.SimpleFold(o) {
				runes = append(runes, o)
			}
		}
		rf, ok := g.runes(runes)
		if !ok {
			return fragment{}, false
		}
		f = g.sequence(f, rf)
	}
	return f, true
}

// charClass builds the fragment matching any rune of a class, refusing
// one with more than maxClassRunes non-ASCII runes.
func (g *glushkov) charClass(re *syntax.Regexp) (fragment, bool) {
	var runes []rune
	wide := 0
	for i := 0; i < len(re.Rune); i += 2 {
		lo, hi := re.Rune[i], re.Rune[i+1]
		if hi >= utf8.RuneSelf {
			// Such as [^a] or \pL: far too many runes to spell out.
			if wide += int(hi - max(lo, utf8.RuneSelf) + 1); wide > maxClassRunes {
				return fragment{}, false
			}
		}
		for r := lo; r <= hi; r++ {
			runes = append(runes, r)
		}
	}
	return g.runes(runes)
}

// step advances the live positions d over byte c.
func (n *byteNFA) step(d uint64, c byte) uint64 {
	var f uint64
	for k := 0; d != 0; k++ {
		f |= n.follow[k][d&0xff]
		d >>= 8
	}
	return f & n.sets[c]
}

// matchLine reports whether line (without its newline) contains a match.
func (n *byteNFA) matchLine(line []byte) bool {
	if len(n.follow) == 1 && !n.anchorStart && !n.anchorEnd {
		// Up to 8 positions, the common case: one lookup per byte.
		follow := &n.follow[0]
		d := uint64(0)
		for _, c := range line {
			d = follow[d&0xff]&n.sets[c] | n.start[c]
			if d&n.last != 0 {
				return true
			}
		}
		return false
	}
	d := uint64(0)
	for i, c := range line {
		d = n.step(d, c)
		if !n.anchorStart || i == 0 {
			d |= n.start[c]
		}
		if d&n.last != 0 && !n.anchorEnd {
			return true
		}
	}
	return d&n.last != 0
}

// nextMatch returns the offset of some byte, at or after from, on the first
// line of buf from from on that contains a match, or -1. from must be at the
// start of a line.
func (n *byteNFA) nextMatch(buf []byte, from int) int {
	d := uint64(0)
	lineStart := true
	for i := from; i < len(buf); i++ {
		c := buf[i]
		if d == 0 {
			// Nothing live: only a start can change that, which
			// with "^" is only possible at a line start.
			if c == '\n' {
				lineStart = true
				continue
			}
			if n.anchorStart && !lineStart {
				j := bytes.IndexByte(buf[i:], '\n')
				if j < 0 {
					return -1
				}
				i += j - 1
				continue
			}
			lineStart = false
			if d = n.start[c]; d&n.last != 0 && !n.anchorEnd {
				return i
			}
			continue
		}
		if c == '\n' {
			if n.anchorEnd && d&n.last != 0 {
				return i - 1
			}
			d, lineStart = 0, true
			continue
		}
		d = n.step(d, c)
		if !n.anchorStart {
			d |= n.start[c]
		}
		if d&n.last != 0 && !n.anchorEnd {
			return i
		}
	}
	if n.anchorEnd && d&n.last != 0 {
		return len(buf) - 1
	}
	return -1
}
