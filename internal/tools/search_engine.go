package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
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
	// maxSearchLineLen is where a shown line is cut. Minified files put a
	// whole program on one line; the model needs the match, not 1 MB.
	maxSearchLineLen = 500
	// maxSearchProgram is the most instructions a pattern's compiled
	// program may have. The regexp's cost per byte grows with it (about
	// 12 ns per live instruction: [a-z]{1000}X takes 13 s per MB), and no
	// question needs more; a long alternation of names stays well below.
	maxSearchProgram = 1000
	// searchWindow is how many bytes are scanned between two looks at the
	// stop flag; a window is extended to the end of its last line.
	searchWindow = 64 << 10
	// searchDirectWork bounds input length × program size of one regexp
	// call on a byte slice, about 50 ms at worst; a longer input is read
	// through a stoppableReader.
	searchDirectWork = 4 << 20
)

// searchMatcher finds the lines of a buffer that match one pattern. It is
// safe for concurrent use: per-buffer state lives in the scan.
type searchMatcher struct {
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
	// only "does this line match" is asked (see search_nfa.go).
	nfa *byteNFA
	// perLine is set for \A and \z, which a pass over the whole buffer
	// sees only at its ends: the regexp then runs on each line alone.
	perLine bool
	// window is searchWindow and directLen the longest input the regexp
	// reads as a byte slice (searchDirectWork over the program size);
	// tests shrink both to put every boundary under test.
	window, directLen int
}

// errPatternSyntax marks a pattern the regexp package rejected.
var errPatternSyntax = errors.New("invalid pattern")

// errPatternTooComplex marks a pattern whose program is over
// maxSearchProgram.
var errPatternTooComplex = errors.New("pattern too complex")

// compileSearch compiles pattern with line semantics: ^ and $ match at line
// boundaries and a match never spans lines (see eachLine).
func compileSearch(pattern string, literal, ignoreCase bool) (*searchMatcher, error) {
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
		return nil, fmt.Errorf("%w: %w", errPatternSyntax, err)
	}
	simple := tree.Simplify()
	// The program the regexp package will run; it compiles the same
	// simplified tree.
	prog, err := syntax.Compile(simple)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPatternSyntax, err)
	}
	if n := len(prog.Inst); n > maxSearchProgram {
		return nil, fmt.Errorf("%w: its compiled program has %d instructions, the limit is %d; search for a literal part of the text instead, use a shorter alternation, or a smaller repetition count than {n,m}",
			errPatternTooComplex, n, maxSearchProgram)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPatternSyntax, err)
	}
	m := &searchMatcher{re: re, window: searchWindow, directLen: searchDirectWork / max(1, len(prog.Inst))}
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
func (m *searchMatcher) eachLine(buf []byte, stop *atomic.Bool, fn func(matchLine) bool) (cut bool) {
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
		case m.hasLit || m.hasClass:
			end = m.eachLiteralLine(buf[:to], from, stop, fn)
		case m.nfa != nil:
			end = m.eachNFALine(buf[:to], from, stop, fn)
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
func (m *searchMatcher) eachLineAlone(buf []byte, pos int, stop *atomic.Bool, fn func(matchLine) bool) scanEnd {
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
func (m *searchMatcher) eachRegexpLine(buf []byte, pos int, stop *atomic.Bool, fn func(matchLine) bool) scanEnd {
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

// eachLiteralLine finds the required literal with a SIMD byte search (or the
// required class run with a byte table) and runs the regexp only on the
// lines that contain it.
func (m *searchMatcher) eachLiteralLine(buf []byte, pos int, stop *atomic.Bool, fn func(matchLine) bool) scanEnd {
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
		default:
			if h = bytes.Index(buf[pos:], m.lit.text); h >= 0 {
				h += pos
			}
		}
		if h < 0 {
			return scanDone
		}
		ls := bytes.LastIndexByte(buf[:h], '\n') + 1
		le := lineEnd(buf, h)
		at, keep := h, true
		if m.hasClass || !m.lit.whole {
			// Match is cheaper than FindIndex, and the automaton
			// cheaper still; where the match starts only matters for
			// cutting a long line around it.
			line := buf[ls:le]
			switch {
			case len(line) <= maxSearchLineLen && m.nfa != nil:
				keep = m.nfa.matchLine(line)
			case len(line) <= maxSearchLineLen:
				keep = m.re.Match(line)
			case m.nfa != nil && !m.nfa.matchLine(line):
				keep = false
			default:
				var cut bool
				if at, keep, cut = m.findStart(buf, ls, le, stop); cut {
					return scanStopped
				}
			}
		}
		if keep && !fn(matchLine{start: ls, end: le, at: at}) {
			return scanQuit
		}
		pos = le + 1
	}
	return scanDone
}

// eachNFALine runs the automaton over the buffer from pos on, for patterns
// with neither a literal nor a class run to prefilter on.
func (m *searchMatcher) eachNFALine(buf []byte, pos int, stop *atomic.Bool, fn func(matchLine) bool) scanEnd {
	for pos < len(buf) {
		h := m.nfa.nextMatch(buf, pos)
		if h < 0 {
			return scanDone
		}
		ls := bytes.LastIndexByte(buf[:h], '\n') + 1
		le := lineEnd(buf, h)
		at, keep := h, true
		if le-ls > maxSearchLineLen {
			var cut bool
			if at, keep, cut = m.findStart(buf, ls, le, stop); cut {
				return scanStopped
			}
		}
		if keep && !fn(matchLine{start: ls, end: le, at: at}) {
			return scanQuit
		}
		pos = le + 1
	}
	return scanDone
}

// findStart runs the regexp on the line buf[ls:le] for where its match
// starts.
func (m *searchMatcher) findStart(buf []byte, ls, le int, stop *atomic.Bool) (at int, ok, cut bool) {
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
func (m *searchMatcher) find(b []byte, stop *atomic.Bool) (loc []int, cut bool) {
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

// outLine is one line of output: a match or a context line.
type outLine struct {
	n     int
	match bool
	text  string
}

// fileHits is what searching one file produced.
type fileHits struct {
	done bool
	// partial is set when the search stopped inside the file: matches
	// and lines are those of the part searched.
	partial bool
	skip    skipKind
	matches int       // matching lines in the file
	lines   []outLine // the first matches (up to the limit) with context
}

type skipKind uint8

const (
	notSkipped skipKind = iota
	skipBinary
	skipHuge
	skipUnreadable
	skipSilently
)

// collectFile finds the matching lines of buf, counting all of them and
// formatting the first limit with contextLines of context around each. It
// stops early, marking the result partial, when stop is set.
func (m *searchMatcher) collectFile(buf []byte, stop *atomic.Bool, contextLines, limit int) fileHits {
	var (
		res fileHits
		// Line numbers are counted lazily, from the last known position.
		cntPos, cntNo = 0, 1
		// The next line not yet emitted, and how far after the last shown
		// match context is still owed.
		emitPos, emitNo = 0, 1
		afterUntil      = 0
	)
	lineAt := func(pos int) int {
		cntNo += bytes.Count(buf[cntPos:pos], []byte{'\n'})
		cntPos = pos
		return cntNo
	}
	// flushAfter emits owed after-context up to line `until` (exclusive).
	flushAfter := func(until int) {
		for emitNo <= afterUntil && emitNo < until && emitPos < len(buf) {
			le := lineEnd(buf, emitPos)
			res.lines = append(res.lines, outLine{n: emitNo, text: cutLine(buf[emitPos:le], 0)})
			emitPos, emitNo = le+1, emitNo+1
		}
		afterUntil = 0
	}
	res.partial = m.eachLine(buf, stop, func(ml matchLine) bool {
		res.matches++
		if res.matches > limit {
			if afterUntil > 0 {
				flushAfter(lineAt(ml.start))
			}
			return true
		}
		no := lineAt(ml.start)
		flushAfter(no)
		// Before-context: walk back from the match, stopping at lines
		// already emitted.
		before := min(contextLines, no-emitNo)
		mark := len(res.lines)
		for p, k := ml.start, 1; k <= before; k++ {
			ps := bytes.LastIndexByte(buf[:p-1], '\n') + 1
			res.lines = append(res.lines, outLine{n: no - k, text: cutLine(buf[ps:p-1], 0)})
			p = ps
		}
		reverse(res.lines[mark:])
		res.lines = append(res.lines, outLine{n: no, match: true, text: cutLine(buf[ml.start:ml.end], ml.at-ml.start)})
		emitPos, emitNo = ml.end+1, no+1
		if contextLines > 0 {
			afterUntil = no + contextLines
		}
		return true
	})
	if afterUntil > 0 {
		flushAfter(int(^uint(0) >> 1))
	}
	return res
}

func reverse(s []outLine) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// cutLine returns line as valid UTF-8 text, cut to about maxSearchLineLen
// bytes around offset at (where the match starts) when it is longer.
func cutLine(line []byte, at int) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) <= maxSearchLineLen {
		return toValidUTF8(line)
	}
	start := max(0, at-maxSearchLineLen/3)
	end := min(len(line), start+maxSearchLineLen)
	start = max(0, end-maxSearchLineLen)
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end++
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	b.WriteString(toValidUTF8(line[start:end]))
	if end < len(line) {
		b.WriteString("…")
	}
	fmt.Fprintf(&b, " [line cut, %d bytes long]", len(line))
	return b.String()
}

func toValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// searchJob is one search over a list of files.
type searchJob struct {
	files []string // searched in this order, which is also output order
	// reader makes one fileReader per worker.
	reader       func() fileReader
	matcher      *searchMatcher
	contextLines int
	maxResults   int
	maxFileSize  int64
	workers      int
	// expired reports whether the time budget is spent; checked between
	// files, alongside ctx, which is also looked at inside a file.
	expired func() bool
}

// searchResult is the outcome of a search, complete or not.
type searchResult struct {
	files    []string
	hits     []fileHits // parallel to files; done is false if never searched
	searched int        // files searched to their end
	cut      int        // files the search stopped inside
	complete bool
}

// liveSearchWorkers counts the workers of all searches that have not
// returned; tests check that none outlives its search.
var liveSearchWorkers atomic.Int64

// bufPool holds file buffers between reads. A search reads thousands of
// files; reusing buffers keeps the garbage collector out of the profile.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// run searches all files, stopping early when ctx ends or time runs out.
// It returns only after every worker has: no work of a search outlives it.
func (j *searchJob) run(ctx context.Context) searchResult {
	res := searchResult{files: j.files, hits: make([]fileHits, len(j.files))}
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	var (
		next     atomic.Int64
		searched atomic.Int64
		cut      atomic.Int64
		// Files past cutoff need no formatted lines: the matches of
		// earlier files already fill the output. Only counts are kept.
		cutoff   atomic.Int64
		mu       sync.Mutex
		frontier int // files before it are done
		shown    int // matches to show among files before frontier
	)
	cutoff.Store(int64(len(j.files)))
	workers := max(1, j.workers)
	// Workers take runs of neighbouring files, which mostly share a
	// directory: a reader opens each directory once per run instead of
	// every worker opening every directory. Runs stay short enough to
	// keep the workers evenly loaded.
	batch := int64(max(1, min(16, len(j.files)/(workers*16))))
	var wg sync.WaitGroup
	for range workers {
		liveSearchWorkers.Add(1)
		wg.Go(func() {
			defer liveSearchWorkers.Add(-1)
			r := j.reader()
			defer r.close()
			for {
				first := int(next.Add(batch) - batch)
				for i := first; i < min(first+int(batch), len(j.files)); i++ {
					if ctx.Err() != nil || j.expired() {
						return
					}
					limit := j.maxResults
					if int64(i) > cutoff.Load() {
						limit = 0
					}
					h := j.searchFile(r, j.files[i], &stop, limit)
					if h.partial {
						cut.Add(1)
					} else {
						searched.Add(1)
					}
					mu.Lock()
					res.hits[i] = h
					for frontier < len(j.files) && res.hits[frontier].done {
						shown += res.hits[frontier].matches
						if shown >= j.maxResults && cutoff.Load() == int64(len(j.files)) {
							cutoff.Store(int64(frontier))
						}
						frontier++
					}
					mu.Unlock()
				}
				if first+int(batch) >= len(j.files) {
					return
				}
			}
		})
	}
	wg.Wait()
	res.searched = int(searched.Load())
	res.cut = int(cut.Load())
	res.complete = res.searched == len(j.files)
	return res
}

func (j *searchJob) searchFile(r fileReader, rel string, stop *atomic.Bool, limit int) fileHits {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf, skip := r.read(rel, (*bp)[:0], j.maxFileSize)
	*bp = buf[:0]
	if skip != notSkipped {
		return fileHits{done: true, skip: skip}
	}
	if bytes.IndexByte(buf[:min(len(buf), binarySniffLen)], 0) >= 0 {
		return fileHits{done: true, skip: skipBinary}
	}
	h := j.matcher.collectFile(buf, stop, j.contextLines, limit)
	h.done = true
	return h
}
