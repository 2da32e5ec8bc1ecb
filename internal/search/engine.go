package search

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"sync/atomic"
	"unicode/utf8"
)

// The search engine works on whole files: read a file into a pooled buffer,
// find candidate lines with a literal prefilter (or one regexp pass over the
// buffer when the pattern has no literal), and format only as many lines as
// can still be shown. Files are searched by a few workers; results are merged
// back into path order, so output is deterministic whatever the scheduling.
//
// A search must end soon after its context does, also in the middle of a
// file: a pattern Go's regexp runs linearly can still cost 10 µs a byte when
// its program is large, and one long line of a big file is then a minute of
// work. So the buffer is scanned in windows of whole lines and a stop flag
// (set by context.AfterFunc, a load cheaper than ctx.Err) is looked at
// between windows, and a regexp call on an input too long to finish quickly
// reads it through a RuneReader that ends the input once the flag is set.

const (
	// binarySniffLen is how much of a file is checked for a NUL byte, as
	// git and ripgrep do.
	binarySniffLen = 8 << 10
	// MaxLineLen is about where a shown line is cut (Line.Text). Minified
	// files put a whole program on one line; the model needs the match,
	// not 1 MB.
	MaxLineLen = 500
	// maxProgram is the most instructions a pattern's compiled
	// program may have. The regexp's cost per byte grows with it (about
	// 12 ns per live instruction: [a-z]{1000}X takes 13 s per MB), and no
	// question needs more; a long alternation of names stays well below.
	maxProgram = 1000
	// searchWindow is how many bytes are scanned between two looks at the
	// stop flag; a window is extended to the end of its last line.
	searchWindow = 64 << 10
	// searchDirectWork bounds input length × program size of one regexp
	// call on a byte slice, about 50 ms at worst; a longer input is read
	// through a stoppableReader.
	searchDirectWork = 4 << 20
)

// Matcher finds the lines of a buffer that match one pattern. It is
// safe for concurrent use: per-buffer state lives in the scan.
type Matcher struct {
	re     *regexp.Regexp
	lit    requiredLiteral
	hasLit bool
	// anchor is the index in lit.text of the byte a case-insensitive scan
	// looks for first: the rarest one, so few false starts are checked.
	anchor int
	// class is the prefilter for patterns without a literal.
	class    classSeq
	hasClass bool
	// nfa, when the pattern allows it, stands in for the regexp wherever
	// only "does this line match" is asked (see nfa.go).
	nfa *byteNFA
	// perLine is set for \A and \z, which a pass over the whole buffer
	// sees only at its ends: the regexp then runs on each line alone.
	perLine bool
	// window is searchWindow and directLen the longest input the regexp
	// reads as a byte slice (searchDirectWork over the program size);
	// tests shrink both to put every boundary under test.
	window, directLen int
}

// ErrSyntax marks a pattern the regexp package rejected.
var ErrSyntax = errors.New("invalid pattern")

// ErrTooComplex marks a pattern whose compiled program is too large to run
// in bounded time; its message says what to search for instead.
var ErrTooComplex = errors.New("pattern too complex")

// Compile compiles pattern (RE2 syntax, or exact text when literal is set)
// with line semantics: ^ and $ match at line boundaries and a match never
// spans lines (see eachLine). Errors wrap ErrSyntax or ErrTooComplex.
func Compile(pattern string, literal, ignoreCase bool) (*Matcher, error) {
	expr := pattern
	if literal {
		expr = regexp.QuoteMeta(pattern)
	}
	flags := "(?m)"
	if ignoreCase {
		flags = "(?mi)"
	}
	expr = flags + expr
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	simple := tree.Simplify()
	// The program the regexp package will run; it compiles the same
	// simplified tree.
	prog, err := syntax.Compile(simple)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	if n := len(prog.Inst); n > maxProgram {
		return nil, fmt.Errorf("%w: its compiled program has %d instructions, the limit is %d; search for a literal part of the text instead, use a shorter alternation, or a smaller repetition count than {n,m}",
			ErrTooComplex, n, maxProgram)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	m := &Matcher{re: re, window: searchWindow, directLen: searchDirectWork / max(1, len(prog.Inst))}
	m.lit, m.hasLit = extractLiteral(simple)
	if m.hasLit && m.lit.fold {
		m.anchor = rarestByte(m.lit.text)
	}
	if !m.hasLit {
		m.class, m.hasClass = extractClassSeq(simple)
	}
	if nfa, ok := compileNFA(simple); ok {
		m.nfa = nfa
	}
	m.perLine = hasTextAnchor(simple)
	return m, nil
}

// matchLine is one matching line: buf[start:end] without its newline, and
// at, the offset in buf where the match (or its literal) begins.
type matchLine struct {
	start, end, at int
}

// scanEnd says why a scan of a window ended.
type scanEnd uint8

const (
	scanDone    scanEnd = iota // the window was scanned to its end
	scanQuit                   // fn returned false
	scanStopped                // the stop flag was set
)

// stopped reports whether the stop flag is set; a nil flag never is.
func stopped(stop *atomic.Bool) bool { return stop != nil && stop.Load() }

// eachLine calls fn for every line of buf the pattern matches, in order,
// until fn returns false. The pattern is matched against each line on its
// own, as grep does: a match never includes a newline. It returns true
// when stop was set before the whole buffer was scanned: the lines passed
// to fn are then only those of the part scanned.
func (m *Matcher) eachLine(buf []byte, stop *atomic.Bool, fn func(matchLine) bool) (cut bool) {
	// Each window ends just after a newline (or at the end of buf), so it
	// holds whole lines, and a line matches in the window exactly when
	// it does in buf: in each scan below, the text after a line's newline
	// plays no part in whether that line matches.
	for from := 0; from < len(buf); {
		if stopped(stop) {
			return true
		}
		to := len(buf)
		if from+m.window < len(buf) {
			to = lineEnd(buf, from+m.window)
			to = min(to+1, len(buf))
		}
		var end scanEnd
		switch {
		case m.hasLit || m.hasClass || m.nfa != nil:
			end = m.eachCandidateLine(buf[:to], from, stop, fn)
		case m.perLine:
			end = m.eachLineAlone(buf[:to], from, stop, fn)
		default:
			end = m.eachRegexpLine(buf[:to], from, stop, fn)
		}
		switch end {
		case scanQuit:
			return false
		case scanStopped:
			return true
		}
		from = to
	}
	return false
}

// eachLineAlone runs the regexp on each line by itself, from pos on.
func (m *Matcher) eachLineAlone(buf []byte, pos int, stop *atomic.Bool, fn func(matchLine) bool) scanEnd {
	for ls := pos; ls < len(buf); {
		le := lineEnd(buf, ls)
		loc, cut := m.find(buf[ls:le], stop)
		if cut {
			return scanStopped
		}
		if loc != nil && !fn(matchLine{start: ls, end: le, at: ls + loc[0]}) {
			return scanQuit
		}
		ls = le + 1
	}
	return scanDone
}

// eachRegexpLine runs the regexp over the buffer from pos on, for patterns
// with nothing cheaper to find candidates with.
func (m *Matcher) eachRegexpLine(buf []byte, pos int, stop *atomic.Bool, fn func(matchLine) bool) scanEnd {
	for pos < len(buf) {
		loc, cut := m.find(buf[pos:], stop)
		if cut {
			return scanStopped
		}
		if loc == nil {
			return scanDone
		}
		s, e := pos+loc[0], pos+loc[1]
		ls := pos + bytes.LastIndexByte(buf[pos:s], '\n') + 1
		if ls >= len(buf) {
			return scanDone // an empty match after the final newline: no line there
		}
		le := lineEnd(buf, s)
		at := s
		// A match that crossed a newline (\s, [^x] and \n can) says
		// nothing about its first line alone; check that line by itself.
		// It is still the leftmost possible line: a match inside a line is
		// also a match in the buffer, since (?m) makes ^ and $ and \b see
		// a newline like the edge of the text.
		keep := true
		if bytes.IndexByte(buf[s:e], '\n') >= 0 {
			loc, cut = m.find(buf[ls:le], stop)
			if cut {
				return scanStopped
			}
			keep = loc != nil
			if keep {
				at = ls + loc[0]
			}
		}
		if keep && !fn(matchLine{start: ls, end: le, at: at}) {
			return scanQuit
		}
		pos = le + 1
	}
	return scanDone
}

// eachCandidateLine finds candidate positions with the cheapest prefilter
// the pattern has, from pos on: the required literal with a SIMD byte
// search, else the required class run with a byte table, else the
// automaton itself. Only the lines of candidates that are not yet known to
// match run the regexp (see checkCandidate).
func (m *Matcher) eachCandidateLine(buf []byte, pos int, stop *atomic.Bool, fn func(matchLine) bool) scanEnd {
	var ff foldFinder
	if m.lit.fold {
		ff = newFoldFinder(buf, m.lit.text, m.anchor)
	}
	for pos < len(buf) {
		var h int
		switch {
		case m.hasClass:
			h = m.class.next(buf, pos)
		case m.lit.fold:
			h = ff.next(pos)
		case m.hasLit:
			if h = bytes.Index(buf[pos:], m.lit.text); h >= 0 {
				h += pos
			}
		default:
			h = m.nfa.nextMatch(buf, pos)
		}
		if h < 0 {
			return scanDone
		}
		ls := bytes.LastIndexByte(buf[:h], '\n') + 1
		le := lineEnd(buf, h)
		at, keep, cut := m.checkCandidate(buf, h, ls, le, stop)
		if cut {
			return scanStopped
		}
		if keep && !fn(matchLine{start: ls, end: le, at: at}) {
			return scanQuit
		}
		pos = le + 1
	}
	return scanDone
}

// checkCandidate says whether the line buf[ls:le] of candidate h matches,
// and where its match starts. A candidate of the automaton, or of a
// literal that is the whole pattern, is a match at h; only on a line too
// long to show whole does the automaton's need the regexp, for where its
// match starts, to cut the line around it. Any other candidate's line is
// checked: Match is cheaper than FindIndex, and the automaton cheaper
// still; where the match starts only matters for cutting a long line.
func (m *Matcher) checkCandidate(buf []byte, h, ls, le int, stop *atomic.Bool) (at int, keep, cut bool) {
	line := buf[ls:le]
	switch {
	case !m.hasLit && !m.hasClass:
		if len(line) > MaxLineLen {
			return m.findStart(buf, ls, le, stop)
		}
		return h, true, false
	case !m.hasClass && m.lit.whole:
		return h, true, false
	case len(line) <= MaxLineLen && m.nfa != nil:
		return h, m.nfa.matchLine(line), false
	case len(line) <= MaxLineLen:
		return h, m.re.Match(line), false
	case m.nfa != nil && !m.nfa.matchLine(line):
		return h, false, false
	}
	return m.findStart(buf, ls, le, stop)
}

// findStart runs the regexp on the line buf[ls:le] for where its match
// starts.
func (m *Matcher) findStart(buf []byte, ls, le int, stop *atomic.Bool) (at int, ok, cut bool) {
	loc, cut := m.find(buf[ls:le], stop)
	if cut || loc == nil {
		return ls, false, cut
	}
	return ls + loc[0], true, false
}

// find is re.FindIndex(b), which cannot be interrupted, for an input short
// enough to be done quickly; a longer one is read through a stoppableReader.
// cut is true when stop was set meanwhile: loc is then meaningless, since
// the regexp took the cut for the end of the text.
func (m *Matcher) find(b []byte, stop *atomic.Bool) (loc []int, cut bool) {
	if stop == nil || len(b) <= m.directLen {
		return m.re.FindIndex(b), false
	}
	r := &stoppableReader{b: b, stop: stop}
	loc = m.re.FindReaderIndex(r)
	return loc, r.cut
}

// stoppableReader gives the regexp the runes of b as its byte methods would
// decode them (an invalid byte is U+FFFD of width 1), so offsets agree, and
// ends the input early once stop is set, looking at it every few KB.
type stoppableReader struct {
	b     []byte
	pos   int
	check int // the next position at which stop is looked at
	stop  *atomic.Bool
	cut   bool
}

// stopCheckEvery is how many bytes a stoppableReader gives between two
// looks at the stop flag.
const stopCheckEvery = 4 << 10

func (r *stoppableReader) ReadRune() (rune, int, error) {
	if r.pos >= len(r.b) {
		return 0, 0, io.EOF
	}
	if r.pos >= r.check {
		if r.stop.Load() {
			r.cut = true
			return 0, 0, io.EOF
		}
		r.check = r.pos + stopCheckEvery
	}
	if c := r.b[r.pos]; c < utf8.RuneSelf {
		r.pos++
		return rune(c), 1, nil
	}
	c, n := utf8.DecodeRune(r.b[r.pos:])
	r.pos += n
	return c, n, nil
}

// hasTextAnchor reports whether re holds \A or \z.
func hasTextAnchor(re *syntax.Regexp) bool {
	if re.Op == syntax.OpBeginText || re.Op == syntax.OpEndText {
		return true
	}
	for _, sub := range re.Sub {
		if hasTextAnchor(sub) {
			return true
		}
	}
	return false
}

func lineEnd(buf []byte, from int) int {
	if i := bytes.IndexByte(buf[from:], '\n'); i >= 0 {
		return from + i
	}
	return len(buf)
}
