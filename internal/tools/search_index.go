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
// match and not skipped. Files the index does not hold (added since) are
// searched as before. Of those it lists but did not read, the binary ones
// (a NUL byte in the first 8 KiB, the scan's own test) are counted as the
// scan counts them, skipped as binary, without opening each again: on Go's
// src/ they are 737 files, most of what a selective literal would read. A
// too large or unreadable one is read, so the scan's word on it stands
// whatever size limit either side has.

// narrow returns the files of the scope idx leaves to search for
// m's required literal, and widen, which turns the result of searching
// those into the result of searching them all. Without an index, or a
// literal the index can narrow by, files are all of them: today's scan.
func (s *SearchCode) narrow(idx CodeIndex, m *search.Matcher, files []string) (narrowed []string, widen func(search.Result) search.Result) {
	same := func(r search.Result) search.Result { return r }
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
	known := s.indexedFiles(idx)
	// All three lists are sorted (files unless the scope is odd): walk
	// them together rather than look each file up.
	in := func(list []string, f string, at *int) bool {
		i, found := slices.BinarySearch(list, f)
		*at = i
		return found
	}
	if slices.IsSorted(files) {
		in = func(list []string, f string, at *int) bool {
			for *at < len(list) && list[*at] < f {
				*at++
			}
			return *at < len(list) && list[*at] == f
		}
	}
	var pos []int // pos[j] is the place in files of narrowed[j]
	var binary []int
	var at, atCand int
	for i, f := range files {
		held := in(known.paths, f, &at)
		if held && known.binary[at] {
			binary = append(binary, i)
			continue
		}
		if picked := in(cands, f, &atCand); picked || !held {
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
		for _, i := range binary {
			out.Hits[i].Skip = search.SkipBinary
		}
		for j, h := range r.Hits {
			out.Hits[pos[j]] = h
		}
		return out
	}
}

// pathLister is an index that can list its files without their symbols
// (index.Index.Paths), which a saved index decodes only when asked.
type pathLister interface {
	Paths() []string
}

// unindexedLister is an index that can say which of its files it did not
// read and why (index.Index.Unindexed).
type unindexedLister interface {
	Unindexed() (binary, huge, unreadable []string)
}

// indexedSet is the files the index of one commit holds, sorted, and
// which of them it found binary.
type indexedSet struct {
	commit string
	paths  []string
	binary []bool // parallel to paths
}

// indexedFiles returns the set of files idx holds, made once per commit:
// every search of a turn asks the same index, and an index describes one
// commit, whose files it always holds.
func (s *SearchCode) indexedFiles(idx CodeIndex) *indexedSet {
	commit := idx.Commit()
	if c := s.indexed.Load(); c != nil && commit != "" && c.commit == commit {
		return c
	}
	var paths []string
	if l, ok := idx.(pathLister); ok {
		paths = slices.Clone(l.Paths())
	} else {
		for _, f := range idx.Files() {
			paths = append(paths, f.Path)
		}
	}
	slices.Sort(paths)
	set := &indexedSet{commit: commit, paths: slices.Compact(paths)}
	set.binary = make([]bool, len(set.paths))
	if u, ok := idx.(unindexedLister); ok {
		binary, _, _ := u.Unindexed()
		for _, p := range binary {
			if i, held := slices.BinarySearch(set.paths, p); held {
				set.binary[i] = true
			}
		}
	}
	s.indexed.Store(set)
	return set
}
