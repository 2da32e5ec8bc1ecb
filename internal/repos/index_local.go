package repos

import (
	"context"

	"github.com/askrepo/askrepo/internal/tools"
)

// noteLocalEdits is what the symbol tools say over a path checkout whose
// files differ from its commit: the index holds them as they were when it
// was built.
const noteLocalEdits = "this checkout has uncommitted changes, which the code index may not hold: symbols and references can be out of date"

// localIndex is a path checkout's index as its tools see it. The files of
// someone else's directory can change at any time after the index read
// them, and an answer must never miss a match a scan would find, so
// search_code does not narrow through it (Candidates says it cannot);
// the symbol tools still answer from it, and say so when the checkout has
// uncommitted changes.
type localIndex struct {
	tools.CodeIndex
	edited bool
}

// Candidates never narrows: see localIndex.
func (localIndex) Candidates([]string, bool) ([]string, bool) { return nil, false }

// Note adds, when the checkout has uncommitted changes, that the index may
// not hold them.
func (x localIndex) Note() string {
	n := x.CodeIndex.Note()
	if !x.edited {
		return n
	}
	if n == "" {
		return noteLocalEdits
	}
	return n + "; " + noteLocalEdits
}

// localEdited reports whether a path checkout's files differ from its
// commit: a tracked file changed, or a file git does not ignore is not
// tracked. A checkout git cannot read counts as edited.
func localEdited(ctx context.Context, g gitCall) bool {
	out, err := g.run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=normal", "--ignore-submodules=all")
	return err != nil || out != ""
}
