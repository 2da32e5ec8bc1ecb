package search

import (
	"bytes"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// Go's regexp has no literal prefilter beyond a literal prefix, so a pattern
// like `\w+Error\(` runs the full automaton over every byte of every file:
// 7–9× slower than ripgrep. Almost every pattern a model writes contains a
// piece of text that any match must include. This file finds that piece in
// the parsed pattern, so whole files can be skipped with a SIMD byte search
// and the regexp runs only on the few lines that contain it.
//
// Soundness is the one thing that matters here: a literal that some match
// could lack would silently hide results. The rules below only ever claim a
// literal for nodes that must consume it; anything unsure yields no literal.

// requiredLiteral is text every match of a pattern contains.
type requiredLiteral struct {
	// text is the literal. When fold is set it is lower-case ASCII and
	// every byte folds only to ASCII (see foldSafe), so an ASCII
	// case-insensitive comparison is exactly Unicode simple folding.
	text []byte
	fold bool
	// whole means a line matches the pattern if and only if it contains
	// text (under fold when set): the regexp need not run at all.
	whole bool
}

// litRune is one rune of a literal in the parse tree, with whether the
// pattern matches it case-insensitively.
type litRune struct {
	r    rune
	fold bool
}

// foldSafe reports whether an ASCII byte's simple case folding orbit stays in
// ASCII. 'k' and 's' do not: (?i)k matches the Kelvin sign U+212A and (?i)s
// matches ſ U+017F, which an ASCII case-insensitive search would miss.
var foldSafe = func() (t [utf8.RuneSelf]bool) {
	for b := rune(0); b < utf8.RuneSelf; b++ {
		t[b] = true
		for r := unicode.SimpleFold(b); r != b; r = unicode.SimpleFold(r) {
			if r >= utf8.RuneSelf {
				t[b] = false
			}
		}
	}
	return t
}()

// extractLiteral returns the best literal every match of re must contain, or
// ok=false when there is none worth using. re must come from syntax.Parse and
// be simplified, so counted repetitions are already expanded.
func extractLiteral(re *syntax.Regexp) (lit requiredLiteral, ok bool) {
	exact, isExact, best := analyzeLiteral(re)
	lit, ok = usableLiteral(best)
	if !ok {
		return requiredLiteral{}, false
	}
	if isExact && len(exact) == len(best) {
		whole, _ := usableLiteral(exact)
		// The literal stands for the whole pattern only if nothing was
		// dropped turning it into bytes and it cannot span lines.
		lit.whole = sameLiteral(whole, exact) && bytes.IndexByte(lit.text, '\n') < 0 && !hasAssertion(re)
	}
	return lit, true
}

// analyzeLiteral returns, for one node: the exact text it matches when it
// matches exactly one string (isExact), and the best required literal found
// anywhere inside it.
func analyzeLiteral(re *syntax.Regexp) (exact []litRune, isExact bool, best []litRune) {
	switch re.Op {
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		seq := make([]litRune, len(re.Rune))
		for i, r := range re.Rune {
			seq[i] = litRune{r: r, fold: fold && unicode.SimpleFold(r) != r}
		}
		return seq, true, seq
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		// Zero-width: the text on either side is adjacent in the input, so
		// literals around it may be joined.
		return nil, true, nil
	case syntax.OpCapture:
		return analyzeLiteral(re.Sub[0])
	case syntax.OpPlus:
		_, _, best = analyzeLiteral(re.Sub[0])
		return nil, false, best
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false, nil
		}
		_, _, best = analyzeLiteral(re.Sub[0])
		return nil, false, best
	case syntax.OpConcat:
		var run []litRune
		isExact = true
		for _, sub := range re.Sub {
			e, ex, b := analyzeLiteral(sub)
			if ex {
				run = append(run, e...)
				continue
			}
			isExact = false
			best = betterLiteral(best, run)
			best = betterLiteral(best, b)
			run = nil
		}
		best = betterLiteral(best, run)
		if isExact {
			return run, true, best
		}
		return nil, false, best
	}
	// Alternations, classes, optional parts and any-char match no single
	// required text.
	return nil, false, nil
}

// betterLiteral returns whichever of a and b gives the longer usable
// literal, preferring case-sensitive ones, which are cheaper to search for.
func betterLiteral(a, b []litRune) []litRune {
	la, oka := usableLiteral(a)
	lb, okb := usableLiteral(b)
	switch {
	case !okb:
		return a
	case !oka:
		return b
	case len(lb.text) > len(la.text):
		return b
	case len(lb.text) == len(la.text) && la.fold && !lb.fold:
		return b
	}
	return a
}

// usableLiteral turns a rune sequence into bytes that can be searched for.
// A sequence with any case-folding rune is searched ASCII case-insensitively,
// using its longest run of fold-safe ASCII runes (matching case-sensitive
// runes of that run case-insensitively only finds more candidates, which is
// safe). Otherwise it is searched as UTF-8, using its longest run without
// U+FFFD, which the regexp also matches against any invalid byte.
func usableLiteral(seq []litRune) (requiredLiteral, bool) {
	fold := false
	for _, lr := range seq {
		fold = fold || lr.fold
	}
	var bestStart, bestEnd, start int
	for i := 0; i <= len(seq); i++ {
		if i < len(seq) && runeUsable(seq[i].r, fold) {
			continue
		}
		if i-start > bestEnd-bestStart {
			bestStart, bestEnd = start, i
		}
		start = i + 1
	}
	if bestEnd == bestStart {
		return requiredLiteral{}, false
	}
	var text []byte
	for _, lr := range seq[bestStart:bestEnd] {
		r := lr.r
		if fold {
			r = unicode.ToLower(r)
		}
		text = utf8.AppendRune(text, r)
	}
	return requiredLiteral{text: text, fold: fold}, true
}

// hasAssertion reports whether re contains a zero-width assertion (^, $, \b
// …), which the literal alone cannot check.
func hasAssertion(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, sub := range re.Sub {
		if hasAssertion(sub) {
			return true
		}
	}
	return false
}

func runeUsable(r rune, fold bool) bool {
	if fold {
		return r < utf8.RuneSelf && foldSafe[r]
	}
	return r != utf8.RuneError && utf8.ValidRune(r)
}

// sameLiteral reports whether lit is the whole of seq with nothing dropped.
func sameLiteral(lit requiredLiteral, seq []litRune) bool {
	n := 0
	for _, lr := range seq {
		n += utf8.RuneLen(lr.r)
	}
	if n != len(lit.text) {
		return false
	}
	if lit.fold {
		// Every rune is searched case-insensitively, so a rune the
		// pattern wants case-sensitively would make the search too loose.
		for _, lr := range seq {
			if !lr.fold && unicode.SimpleFold(lr.r) != lr.r {
				return false
			}
		}
	}
	return true
}

// RequiredLiterals returns text that every match of the pattern contains,
// for an index to pick the files worth searching: with fold set, ASCII
// case-insensitively (the texts are then lower-case ASCII). ok is false when
// the pattern has no such text, and every file must be searched.
func (m *Matcher) RequiredLiterals() (lits []string, fold, ok bool) {
	if !m.hasLit {
		return nil, false, false
	}
	return []string{string(m.lit.text)}, m.lit.fold, true
}
