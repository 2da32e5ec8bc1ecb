package tools

import (
	"github.com/askrepo/askrepo/internal/search"
)

// A pattern with a required literal can only match in files holding that
// literal, and the code index knows which files may: search_code then reads
// those alone. What it returns must be exactly what the scan returns, so
// nothing else changes: every file of the scope is still walked in order
// and counted, and a file the index holds but rules out reads as an empty
// text file (no match, not skipped). Files the index does not hold (binary,
// too large, added since) are read as before, so what the scan says of
// them (skipped as binary or huge) it still says.

// narrow wraps newReader to skip the files the index rules out for m's
// required literal. Without an index, or a literal the index can narrow
// by, it returns newReader: the scan is today's.
func (s *SearchCode) narrow(m *search.Matcher, newReader func() search.FileReader) func() search.FileReader {
	idx, _ := codeIndex(s.index)
	if idx == nil {
		return newReader
	}
	lits, fold, ok := m.RequiredLiterals()
	if !ok {
		return newReader
	}
	cands, ok := idx.Candidates(lits, fold)
	if !ok {
		return newReader
	}
	keep := make(map[string]bool, len(cands))
	for _, f := range cands {
		keep[f] = true
	}
	files := idx.Files()
	out := make(map[string]bool, len(files))
	for _, f := range files {
		if !keep[f.Path] {
			out[f.Path] = true
		}
	}
	return func() search.FileReader { return ruledOut{FileReader: newReader(), out: out} }
}

// ruledOut reads the files of out as empty text files, the others through
// the reader it wraps.
type ruledOut struct {
	search.FileReader
	out map[string]bool
}

func (r ruledOut) Read(rel string, buf []byte, maxSize int64) ([]byte, search.Skip) {
	if r.out[rel] {
		return buf[:0], search.NotSkipped
	}
	return r.FileReader.Read(rel, buf, maxSize)
}
