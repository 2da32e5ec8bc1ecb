package repos

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// A Manager that indexes holds a directory of DataDir/procs (locked, as
// an owner directory of worktrees is) for its life, so that a OneShot one
// can tell whether another process is using the saved code indexes: while
// one is, the OneShot Manager deletes none (the service beside it may hold
// them, or be writing one), and when none is, it tidies up as the service
// would. The service always does.

// claimPresence marks this process as using DataDir; a failure only
// makes a OneShot Manager of another process leave saved indexes alone.
func (m *Manager) claimPresence() {
	o, err := claimOwner(filepath.Join(m.opts.DataDir, "procs"))
	if err != nil {
		m.log.Warn("mark this process as using the data directory", "err", err)
		return
	}
	m.presence = o
}

// alone reports whether no other live process uses DataDir, removing the
// marks of those that ended.
func (m *Manager) alone() bool {
	dir := filepath.Join(m.opts.DataDir, "procs")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if m.presence != nil && p == m.presence.dir {
			continue
		}
		o, err := lockDir(p)
		switch {
		case err == nil:
			os.RemoveAll(p)
			o.drop()
		case !errors.Is(err, fs.ErrNotExist):
			return false
		}
	}
	return true
}
