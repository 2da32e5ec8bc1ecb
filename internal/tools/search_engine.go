package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

const (
	// binarySniffLen is how much of a file is checked for a NUL byte, as
	// git and ripgrep do.
	binarySniffLen = 8 << 10
	// maxSearchLineLen is where a shown line is cut. Minified files put a
	// whole program on one line; the model needs the match, not 1 MB.
	maxSearchLineLen = 500
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
}

// errPatternSyntax marks a pattern the regexp package rejected.
var errPatternSyntax = errors.New("invalid pattern")

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
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPatternSyntax, err)
	}
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errPatternSyntax, err)
	}
	m := &searchMatcher{re: re}
	simple := tree.Simplify()
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

// eachLine calls fn for every line of buf the pattern matches, in order,
// until fn returns false. The pattern is matched against each line on its
// own, as grep does: a match never includes a newline.
func (m *searchMatcher) eachLine(buf []byte, fn func(matchLine) bool) {
	if m.hasLit || m.hasClass {
		m.eachLiteralLine(buf, fn)
		return
	}
	if m.nfa != nil {
		m.eachNFALine(buf, fn)
		return
	}
	if m.perLine {
		for ls := 0; ls < len(buf); {
			le := lineEnd(buf, ls)
			if loc := m.re.FindIndex(buf[ls:le]); loc != nil && !fn(matchLine{start: ls, end: le, at: ls + loc[0]}) {
				return
			}
			ls = le + 1
		}
		return
	}
	for pos := 0; pos < len(buf); {
		loc := m.re.FindIndex(buf[pos:])
		if loc == nil {
			return
		}
		s, e := pos+loc[0], pos+loc[1]
		ls := pos + bytes.LastIndexByte(buf[pos:s], '\n') + 1
		if ls >= len(buf) {
			return // an empty match after the final newline: no line there
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
			loc = m.re.FindIndex(buf[ls:le])
			keep = loc != nil
			if keep {
				at = ls + loc[0]
			}
		}
		if keep && !fn(matchLine{start: ls, end: le, at: at}) {
			return
		}
		pos = le + 1
	}
}

// eachLiteralLine finds the required literal with a SIMD byte search (or the
// required class run with a byte table) and runs the regexp only on the
// lines that contain it.
func (m *searchMatcher) eachLiteralLine(buf []byte, fn func(matchLine) bool) {
	var ff foldFinder
	if m.lit.fold {
		ff = newFoldFinder(buf, m.lit.text, m.anchor)
	}
	for pos := 0; pos < len(buf); {
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
			return
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
				at, keep = m.findStart(buf, ls, le)
			}
		}
		if keep && !fn(matchLine{start: ls, end: le, at: at}) {
			return
		}
		pos = le + 1
	}
}

// eachNFALine runs the automaton over the whole buffer, for patterns with
// neither a literal nor a class run to prefilter on.
func (m *searchMatcher) eachNFALine(buf []byte, fn func(matchLine) bool) {
	for pos := 0; pos < len(buf); {
		h := m.nfa.nextMatch(buf, pos)
		if h < 0 {
			return
		}
		ls := bytes.LastIndexByte(buf[:h], '\n') + 1
		le := lineEnd(buf, h)
		at, keep := h, true
		if le-ls > maxSearchLineLen {
			at, keep = m.findStart(buf, ls, le)
		}
		if keep && !fn(matchLine{start: ls, end: le, at: at}) {
			return
		}
		pos = le + 1
	}
}

// findStart runs the regexp on the line buf[ls:le] for where its match
// starts.
func (m *searchMatcher) findStart(buf []byte, ls, le int) (at int, ok bool) {
	loc := m.re.FindIndex(buf[ls:le])
	if loc == nil {
		return ls, false
	}
	return ls + loc[0], true
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
	done    bool
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
// formatting the first limit with contextLines of context around each.
func (m *searchMatcher) collectFile(buf []byte, contextLines, limit int) fileHits {
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
	m.eachLine(buf, func(ml matchLine) bool {
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
	// files, alongside ctx.
	expired func() bool
}

// searchResult is the outcome of a search, complete or not.
type searchResult struct {
	files    []string
	hits     []fileHits // parallel to files; done is false if never searched
	searched int
	complete bool
}

// bufPool holds file buffers between reads. A search reads thousands of
// files; reusing buffers keeps the garbage collector out of the profile.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// run searches all files, stopping early when ctx ends or time runs out.
func (j *searchJob) run(ctx context.Context) searchResult {
	res := searchResult{files: j.files, hits: make([]fileHits, len(j.files))}
	var (
		next     atomic.Int64
		searched atomic.Int64
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
		wg.Go(func() {
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
					h := j.searchFile(r, j.files[i], limit)
					searched.Add(1)
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
	res.complete = res.searched == len(j.files)
	return res
}

func (j *searchJob) searchFile(r fileReader, rel string, limit int) fileHits {
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
	h := j.matcher.collectFile(buf, j.contextLines, limit)
	h.done = true
	return h
}
