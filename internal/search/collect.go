package search

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Line is one line of output: a match or a context line.
type Line struct {
	N     int    // line number, from 1
	Match bool   // false for a context line
	Text  string // valid UTF-8, cut around the match when very long
}

// FileHits is what searching one file produced.
type FileHits struct {
	Done bool // false if the file was never searched
	// Partial is set when the search stopped inside the file: Matches
	// and Lines are those of the part searched.
	Partial bool
	Skip    Skip
	Matches int    // matching lines in the file
	Lines   []Line // the first matches (up to the limit) with context
}

// Skip says why a file was not searched.
type Skip uint8

const (
	NotSkipped     Skip = iota
	SkipBinary          // a NUL byte near the start
	SkipHuge            // larger than the job's MaxFileSize
	SkipUnreadable      // opening or reading failed
	SkipSilently        // not to be counted or mentioned (e.g. denied)
)

// collectFile finds the matching lines of buf, counting all of them and
// formatting the first limit with contextLines of context around each. It
// stops early, marking the result partial, when stop is set.
func (m *Matcher) collectFile(buf []byte, stop *atomic.Bool, contextLines, limit int) FileHits {
	var (
		res FileHits
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
			res.Lines = append(res.Lines, Line{N: emitNo, Text: cutLine(buf[emitPos:le], 0)})
			emitPos, emitNo = le+1, emitNo+1
		}
		afterUntil = 0
	}
	res.Partial = m.eachLine(buf, stop, func(ml matchLine) bool {
		res.Matches++
		if res.Matches > limit {
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
		mark := len(res.Lines)
		for p, k := ml.start, 1; k <= before; k++ {
			ps := bytes.LastIndexByte(buf[:p-1], '\n') + 1
			res.Lines = append(res.Lines, Line{N: no - k, Text: cutLine(buf[ps:p-1], 0)})
			p = ps
		}
		reverse(res.Lines[mark:])
		res.Lines = append(res.Lines, Line{N: no, Match: true, Text: cutLine(buf[ml.start:ml.end], ml.at-ml.start)})
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

func reverse(s []Line) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// cutLine returns line as valid UTF-8 text, cut to about MaxLineLen
// bytes around offset at (where the match starts) when it is longer.
func cutLine(line []byte, at int) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) <= MaxLineLen {
		return toValidUTF8(line)
	}
	start := max(0, at-MaxLineLen/3)
	end := min(len(line), start+MaxLineLen)
	start = max(0, end-MaxLineLen)
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
