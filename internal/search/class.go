package search

import (
	"encoding/binary"
	"math/bits"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// Some patterns have no literal at all ([A-Z][a-z]+[0-9]{2,}), and Go's
// regexp then costs 1–1.5 s per 100 MB. Most still require a short run of
// ASCII character classes that is rare in text: here two digits in a row.
// classSeq finds the rarest such run from the parse tree and scans for it
// with a byte table, so the regexp only sees the lines that contain it.
// The same soundness rule as for literals applies: only nodes that must
// consume exactly one byte of a known set are used.

// byteSet is a set of bytes, indexed by byte.
type byteSet [256]bool

// classSeq is a run of byte sets every match contains, consecutively.
type classSeq struct {
	sets   []*byteSet
	anchor int     // the rarest set, scanned for first
	prob   float64 // estimated chance that a position starts the run
	// pair, when ok, is the rarest two adjacent sets that are each one
	// range of ASCII bytes ([0-9][0-9] above), found eight bytes at a
	// time (see nextPair).
	pair pairScan
}

// maxClassSeqProb is the most common run still worth prefiltering with: at
// about one position in fifty, most lines of code are skipped.
const maxClassSeqProb = 0.02

// byteFreq is how often each byte occurs in source code, per 10,000 bytes,
// measured over the Go distribution's src tree (text files ≤ 2 MB).
// Bytes ≥ 0x80 are lumped together at 1.
var byteFreq = [256]uint16{
	0, 1, 1, 1, 1, 1, 1, 1, 1, 363, 306, 1, 0, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1453, 12, 91, 3, 6, 9, 12, 8, 117, 117, 20, 13, 230, 25, 137, 122,
	352, 129, 98, 76, 78, 50, 72, 41, 62, 44, 97, 10, 11, 86, 10, 1,
	1, 114, 37, 56, 48, 68, 36, 21, 19, 54, 5, 9, 39, 44, 37, 54,
	48, 12, 58, 77, 69, 24, 38, 14, 19, 13, 7, 25, 53, 25, 1, 73,
	5, 295, 84, 183, 159, 487, 167, 99, 90, 277, 8, 42, 182, 105, 307, 251,
	124, 8, 322, 260, 398, 146, 63, 39, 215, 66, 12, 60, 13, 60, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
}

func (s *byteSet) prob() float64 {
	var n int
	for b, in := range s {
		if in {
			n += int(byteFreq[b])
		}
	}
	return float64(n) / 10000
}

// extractClassSeq returns the rarest required run of byte sets in re, or
// ok=false when none is rare enough to pay for itself.
func extractClassSeq(re *syntax.Regexp) (classSeq, bool) {
	_, _, _, best := analyzeClasses(re)
	if len(best) == 0 {
		return classSeq{}, false
	}
	cs := classSeq{sets: best, prob: seqProb(best)}
	if cs.prob > maxClassSeqProb {
		return classSeq{}, false
	}
	for i, s := range best {
		if s.prob() < best[cs.anchor].prob() {
			cs.anchor = i
		}
	}
	cs.pair = findPair(best)
	return cs, true
}

func seqProb(seq []*byteSet) float64 {
	if len(seq) == 0 {
		return 1
	}
	p := 1.0
	for _, s := range seq {
		p *= s.prob()
	}
	return p
}

func rarerSeq(a, b []*byteSet) []*byteSet {
	if len(b) > 0 && (len(a) == 0 || seqProb(b) < seqProb(a)) {
		return b
	}
	return a
}

// analyzeClasses is like analyzeLiteral, for runs of one-byte sets. It also
// returns the runs every match of the node starts and ends with, so a
// repetition joins its neighbours: in [0-9][0-9]+ the run is two digits.
func analyzeClasses(re *syntax.Regexp) (prefix, suffix []*byteSet, isExact bool, best []*byteSet) {
	switch re.Op {
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		var run []*byteSet
		isExact = true
		for _, r := range re.Rune {
			sets, ok := runeSets(r, fold)
			if !ok {
				if isExact {
					prefix = run
				}
				isExact = false
				best = rarerSeq(best, run)
				run = nil
				continue
			}
			run = append(run, sets...)
		}
		best = rarerSeq(best, run)
		if isExact {
			return run, run, true, best
		}
		return prefix, run, false, best
	case syntax.OpCharClass:
		var s byteSet
		for i := 0; i < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8.RuneSelf {
				return nil, nil, false, nil // a byte set cannot say "one rune of many bytes"
			}
			for r := lo; r <= hi; r++ {
				s[r] = true
			}
		}
		seq := []*byteSet{&s}
		return seq, seq, true, seq
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil, nil, true, nil
	case syntax.OpCapture:
		return analyzeClasses(re.Sub[0])
	case syntax.OpPlus, syntax.OpRepeat:
		if re.Op == syntax.OpRepeat && re.Min < 1 {
			return nil, nil, false, nil
		}
		// x+ starts with x and ends with x.
		prefix, suffix, _, best = analyzeClasses(re.Sub[0])
		return prefix, suffix, false, best
	case syntax.OpConcat:
		var run []*byteSet
		isExact = true
		for _, sub := range re.Sub {
			p, sf, ex, b := analyzeClasses(sub)
			if ex {
				run = append(run, p...)
				continue
			}
			run = append(run, p...)
			if isExact {
				prefix = run
			}
			isExact = false
			best = rarerSeq(rarerSeq(best, run), b)
			run = append([]*byteSet(nil), sf...)
		}
		best = rarerSeq(best, run)
		if isExact {
			return run, run, true, best
		}
		return prefix, run, false, best
	}
	return nil, nil, false, nil
}

// runeSets gives the byte sets one literal rune always matches: its UTF-8
// bytes, or under case folding the ASCII forms of a rune whose folds are all
// ASCII. ok is false when the rune's forms differ in length.
func runeSets(r rune, fold bool) ([]*byteSet, bool) {
	if fold && unicode.SimpleFold(r) != r {
		if r >= utf8.RuneSelf || !foldSafe[r] {
			return nil, false
		}
		var s byteSet
		s[r] = true
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			s[f] = true
		}
		return []*byteSet{&s}, true
	}
	if r == utf8.RuneError {
		return nil, false // also matches any invalid byte
	}
	var sets []*byteSet
	for _, b := range utf8.AppendRune(nil, r) {
		var s byteSet
		s[b] = true
		sets = append(sets, &s)
	}
	return sets, true
}

// next returns the first offset at or after from where the run starts, or
// -1.
func (c *classSeq) next(buf []byte, from int) int {
	if c.pair.ok {
		return c.nextPair(buf, from)
	}
	return c.nextByte(buf, from)
}

// matchAt reports whether the run starts at s (which must leave room for
// it).
func (c *classSeq) matchAt(buf []byte, s int) bool {
	for k, set := range c.sets {
		if !set[buf[s+k]] {
			return false
		}
	}
	return true
}

// The byte-at-a-time scan costs about 2ns per byte when the anchor set is
// as common as digits (one byte in ten in code). Two adjacent digits are ten
// times rarer, and eight bytes can be tested at once for membership in a
// range with a few word operations (SWAR: "Determine if a word has a byte
// between m and n", Bit Twiddling Hacks): a pair scan reads a word, flags
// the bytes in each of the two ranges, and only looks closer where a byte of
// the first range is followed by one of the second.

// pairScan is the pair of sets at at and at+1, as the exclusive byte bounds
// of their ranges: lo1 < b < hi1, lo2 < b < hi2.
type pairScan struct {
	ok                 bool
	same               bool // both ranges are one: one test per word
	at                 int
	lo1, hi1, lo2, hi2 uint64
}

// findPair picks the rarest adjacent pair of sets that are both one range
// of ASCII bytes.
func findPair(sets []*byteSet) pairScan {
	var best pairScan
	bestProb := 2.0
	for i := 0; i+1 < len(sets); i++ {
		lo1, hi1, ok1 := asciiRange(sets[i])
		lo2, hi2, ok2 := asciiRange(sets[i+1])
		if !ok1 || !ok2 {
			continue
		}
		if p := sets[i].prob() * sets[i+1].prob(); p < bestProb {
			bestProb = p
			best = pairScan{ok: true, same: lo1 == lo2 && hi1 == hi2, at: i, lo1: lo1 - 1, hi1: hi1 + 1, lo2: lo2 - 1, hi2: hi2 + 1}
		}
	}
	return best
}

// asciiRange returns the bounds of s when it is exactly the bytes lo..hi,
// within 1..127 (the word test needs lo-1 >= 0 and hi+1 <= 128).
func asciiRange(s *byteSet) (lo, hi uint64, ok bool) {
	first, last := -1, -1
	for b, in := range s {
		if !in {
			continue
		}
		if first < 0 {
			first = b
		} else if b != last+1 {
			return 0, 0, false
		}
		last = b
	}
	if first < 1 || last > 127 {
		return 0, 0, false
	}
	return uint64(first), uint64(last), true
}

const (
	ones    = 0x0101010101010101
	low7    = 0x7f7f7f7f7f7f7f7f
	highBit = 0x8080808080808080
)

// between flags, with its high bit, each byte b of x with m < b < n
// (0 <= m, n <= 128). Exact per byte: the masked arithmetic never carries
// or borrows across bytes.
func between(x, m, n uint64) uint64 {
	x7 := x & low7
	return (ones*(127+n) - x7) & ^x & (x7 + ones*(127-m)) & highBit
}

// nextPair is next, finding candidates by the pair eight bytes at a time.
// Words overlap by one byte, so each word answers for the pairs starting
// in its first seven bytes.
func (c *classSeq) nextPair(buf []byte, from int) int {
	n, at := len(c.sets), c.pair.at
	// q is where the pair would start; the run then starts at q-at.
	q := from + at
	limit := len(buf) - n + at // the last q with room for the run
	for ; q+8 <= len(buf) && q <= limit; q += 7 {
		w := binary.LittleEndian.Uint64(buf[q:])
		f1 := between(w, c.pair.lo1, c.pair.hi1)
		f2 := f1
		if !c.pair.same {
			f2 = between(w, c.pair.lo2, c.pair.hi2)
		}
		hits := f1 & (f2 >> 8)
		for hits != 0 {
			j := q + bits.TrailingZeros64(hits)/8
			hits &= hits - 1
			if j <= limit && c.matchAt(buf, j-at) {
				return j - at
			}
		}
	}
	if q > limit {
		return -1
	}
	return c.nextByte(buf, q-at)
}

// nextByte is next, a byte at a time from the rarest set.
func (c *classSeq) nextByte(buf []byte, from int) int {
	n := len(c.sets)
	anchor := c.sets[c.anchor]
	for i := from + c.anchor; i <= len(buf)-n+c.anchor; i++ {
		if !anchor[buf[i]] {
			continue
		}
		if s := i - c.anchor; c.matchAt(buf, s) {
			return s
		}
	}
	return -1
}
