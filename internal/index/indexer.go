package index

import (
	"context"
	"fmt"

	"github.com/askrepo/askrepo/internal/tools"
)

// Indexer is Build, Update, Save and Load over tools.CodeIndex, the shape
// repos.Options.Indexer takes: package repos decides when a commit gets an
// index and how long it is kept, this package how one is made.
type Indexer struct {
	Options Options
	// CheckOnLoad checks every checksum of a saved index when it is
	// loaded (Verify), so a damaged one is refused and built again rather
	// than answering less. Without it, Load checks what every query reads
	// and leaves the rest to first use: for a process that answers one
	// call and should not read 50 MB to check what it never uses.
	CheckOnLoad bool
}

// Build indexes ws at commit.
func (x Indexer) Build(ctx context.Context, ws *tools.Workspace, commit string) (tools.CodeIndex, error) {
	ix, err := Build(ctx, ws, commit, x.Options)
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// Update derives the index of commit from prev, an index of this package.
func (x Indexer) Update(ctx context.Context, prev tools.CodeIndex, ws *tools.Workspace, commit string, changed []string) (tools.CodeIndex, error) {
	p, ok := prev.(*Index)
	if !ok {
		return nil, fmt.Errorf("update from a %T: not an index of this package", prev)
	}
	ix, err := Update(ctx, p, ws, commit, changed, x.Options)
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// Save writes idx, an index of this package, at path.
func (x Indexer) Save(idx tools.CodeIndex, path string) error {
	p, ok := idx.(*Index)
	if !ok {
		return fmt.Errorf("save a %T: not an index of this package", idx)
	}
	return p.Save(path)
}

// Load reads the index saved at path, reading the lines of its references
// through ws; one read through another wall (see wallKey) is refused.
func (x Indexer) Load(ctx context.Context, path string, ws *tools.Workspace) (tools.CodeIndex, error) {
	ix, err := Load(path)
	if err != nil {
		return nil, err
	}
	wall := wallKey(ctx, ws)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load index %s: %w", path, err)
	}
	if ix.wall != wall {
		return nil, fmt.Errorf("load index %s: it was built from another directory of the repository or under another deny-list; build it again", path)
	}
	if x.CheckOnLoad {
		if err := ix.Verify(); err != nil {
			return nil, fmt.Errorf("load index %s: %w", path, err)
		}
	}
	return ix.WithWorkspace(ws), nil
}
