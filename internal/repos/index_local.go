package repos

import (
	"github.com/askrepo/askrepo/internal/tools"
)

// noteLocalEdits is what the symbol tools say over a path checkout whose
// files differ from its commit, now or when its index was built: the index
// holds them as they were then.
const noteLocalEdits = "this checkout's files differ from its commit (now, or when its code index was built): symbols and references can be out of date"

// A path checkout is someone else's directory, read in place: its files
// can differ from its commit, and change at any time. Its index is read
// from the files, so it matches the commit only when they did not differ
// while it was built; one that was built over edits is inexact, kept in
// memory only, and never the base of the next commit's. A search must
// never miss a match a scan would find, so over an inexact index, or a
// checkout whose files differ when a turn leases it, search_code does not
// narrow (see localIndex); the symbol tools still answer, with a note.

// inexact is the index of a path checkout built while its files differed
// from its commit.
type inexact struct{ tools.CodeIndex }

func isInexact(idx tools.CodeIndex) bool {
	_, ok := idx.(inexact)
	return ok
}

// localIndex is what a turn's tools see of a path checkout's index when
// it may not match the files: no narrowing, and a note.
type localIndex struct{ tools.CodeIndex }

// Candidates never narrows: see localIndex.
func (localIndex) Candidates([]string, bool) ([]string, bool) { return nil, false }

// Note adds that the index may not match the files.
func (x localIndex) Note() string {
	if n := x.CodeIndex.Note(); n != "" {
		return n + "; " + noteLocalEdits
	}
	return noteLocalEdits
}
