package tools

import (
	"slices"

	"github.com/askrepo/askrepo/internal/search"
)

// A pattern with a required literal can only match in files holding that
// literal, and the code index knows which files may: search_code then
// reads those alone. What it returns must be exactly what the scan
// returns, so the result is widened back to every file of the scope, in
// order: a file the index holds but rules out counts as searched, with no
// match and not skipped. Files the index does not hold (added since) and
// those it lists but did not read (binary, too large: candidates for every
// query) are searched as before, so what the scan says of them (skipped as
// binary or huge) it still says.

// narrow returns the files of the scope the index leaves to search for
// m's required literal, and widen, which turns the result of searching
// those into the result of searching them all. Without an index, or a
// literal the index can narrow by, files are all of them: today's scan.
func (s *SearchCode) narrow(m *search.Matcher, files []string) (narrowed []string, widen func(search.Result) search.Result) {
	same := func(r search.Result) search.Result { return r }
	idx, _ := codeIndex(s.index)
	if idx == nil || s.opts.MaxFileSize < DefaultSearchMaxFileSize {
		// The index holds the text of files up to the default size; a
		// search with a lower limit must see which of those it skips as
		// too large, so it reads them all.
		return files, same
	}
	lits, fold, ok := m.RequiredLiterals()
	if !ok {
		return files, same
	}
	cands, ok := idx.Candidates(lits, fold)
	if !ok {
		return files, same
	}
	if !slices.IsSorted(cands) {
		cands = slices.Sorted(slices.Values(cands))
	}
	indexed := s.indexedFiles(idx)
	var pos []int // pos[j] is the place in files of narrowed[j]
	for i, f := range files {
		_, held := indexed[f]
		if _, picked := slices.BinarySearch(cands, f); picked || !held {
			narrowed = append(narrowed, f)
			pos = append(pos, i)
		}
	}
	return narrowed, func(r search.Result) search.Result {
		out := search.Result{Files: files, Hits: make([]search.FileHits, len(files)), Cut: r.Cut, Complete: r.Complete}
		out.Searched = r.Searched + len(files) - len(narrowed)
		for i := range out.Hits {
			out.Hits[i].Done = true
		}
		for j, h := range r.Hits {
			out.Hits[pos[j]] = h
		}
		return out
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
