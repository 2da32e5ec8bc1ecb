// Package search finds the lines of files that match a pattern, fast and
// stoppable: a literal or byte-class prefilter finds candidate lines, a
// bit-parallel automaton or Go's regexp confirms them, and a Job searches
// a list of files with a few workers, merging results back into list order
// and ending soon after its context does, also in the middle of a file,
// with what it found so far.
//
// Compile refuses a pattern whose program is too large to run in bounded
// time (ErrTooComplex) and marks syntax errors (ErrSyntax).
//
// What a search may read is not decided here: files are read through a
// FileReader the caller supplies, so the workspace's wall (the checkout's
// root, the deny-list, secret content) stays with the caller.
//
// This package must not import any other internal package: it is the
// engine below the search tool, and depends only on the standard library.
package search
