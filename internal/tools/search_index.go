package tools

import (
	"slices"

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
	if !slices.IsSorted(cands) {
		cands = slices.Sorted(slices.Values(cands))
	}
	indexed := s.indexedFiles(idx)
	return func() search.FileReader {
		return ruledOut{FileReader: newReader(), indexed: indexed, cands: cands}
	}
}

// indexedSet is the files the index of one commit holds.
type indexedSet struct {
	commit string
	paths  map[string]struct{}
}

// indexedFiles returns the set of files idx holds, made once per commit:
// every search of a turn asks the same index, and an index describes one
// commit, whose files it always holds.
func (s *SearchCode) indexedFiles(idx CodeIndex) map[string]struct{} {
	commit := idx.Commit()
	if c := s.indexed.Load(); c != nil && commit != "" && c.commit == commit {
		return c.paths
	}
	files := idx.Files()
	paths := make(map[string]struct{}, len(files))
	for _, f := range files {
		paths[f.Path] = struct{}{}
	}
	s.indexed.Store(&indexedSet{commit: commit, paths: paths})
	return paths
}

// ruledOut reads the files the index holds but did not pick (cands,
// sorted) as empty text files, the others through the reader it wraps.
type ruledOut struct {
	search.FileReader
	indexed map[string]struct{}
	cands   []string
}

func (r ruledOut) Read(rel string, buf []byte, maxSize int64) ([]byte, search.Skip) {
	if _, held := r.indexed[rel]; held {
		if _, picked := slices.BinarySearch(r.cands, rel); !picked {
			return buf[:0], search.NotSkipped
		}
	}
	return r.FileReader.Read(rel, buf, maxSize)
}
