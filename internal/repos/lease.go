package repos

import (
	"context"
	"fmt"
	"sync"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/tools"
)

// Lease is a repository as one turn sees it: a directory at one commit
// that does not change until Release. The Workspace is built and owned by
// the Manager; do not close it, and do not use it after Release.
type Lease struct {
	Name   string
	Dir    string // absolute checkout directory
	Commit string // full SHA; "" when a local path is not a git checkout
	Branch string // configured branch; "" = the remote's default
	// Remote is the git remote without credentials (for a local path: its
	// origin, if any).
	Remote string
	// Web is the repository's web view for permalinks: web_url/web_kind
	// when configured, else derived from Remote; Base is "" when neither
	// gives one (a file:// remote, a host of unknown kind).
	Web       cite.Web
	Workspace *tools.Workspace

	once    sync.Once
	release func()

	// local is set for a path checkout: someone else's directory, read in
	// place, whose files may differ from Commit and whose Commit may never
	// have reached the web view (see keepLinks).
	local bool
	git   gitCall
	// unpushed says why Commit of a local checkout with a web view cannot
	// be linked: "" when it is on a remote-tracking branch (see
	// pushedNote).
	unpushed string

	// edited is set for a path checkout whose files differ from Commit
	// when the lease was taken (see localIndex).
	edited bool
	// index is Commit's code index, pinned until Release, in indexes;
	// nil when indexes are off.
	indexes *indexes
	index   *indexEntry
}

// Index returns the code index of exactly the lease's commit when it is
// ready, else nil and a note for the tools' results; nil and "" when
// indexes are off. It never waits for a build. It is a tools.IndexSource.
func (l *Lease) Index() (tools.CodeIndex, string) {
	if l.indexes == nil {
		return nil, ""
	}
	if l.index == nil {
		return nil, noteIndexNoCommit
	}
	idx, note := l.indexes.lookup(l.index)
	if in, ok := idx.(inexact); ok || (idx != nil && l.edited) {
		if ok {
			idx = in.CodeIndex
		}
		idx = localIndex{idx}
	}
	return idx, note
}

var _ tools.IndexSource = (*Lease)(nil).Index

// Release ends the lease. It is safe to call more than once. When the
// lease was the last on an outdated worktree, that worktree is deleted
// before Release returns.
func (l *Lease) Release() { l.once.Do(l.release) }

// Acquire leases repository name for one turn. Release the lease when the
// turn ends; until then its Dir and Commit do not change.
func (m *Manager) Acquire(ctx context.Context, name string) (*Lease, error) {
	r, ok := m.repos[name]
	if !ok {
		return nil, fmt.Errorf("%w %q; configured: %s", ErrUnknownRepo, name, joinNames(m.Repos()))
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	r.mu.Lock()
	s := r.cur
	if s != nil && s.retire {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	if s == nil {
		msg := r.lastErr
		r.mu.Unlock()
		if msg == "" {
			msg = "no clone yet"
		}
		return nil, fmt.Errorf("%w: %s: its clone failed (%s); it is retried within seconds, then less often, up to every %s", ErrUnavailable, name, msg, m.opts.SyncEvery)
	}
	s.refs++
	var pinned *indexEntry
	if m.ix != nil && !r.local {
		// Pinned with the checkout, so a sync cannot drop it between.
		pinned = r.indexes.pin(s.commit)
	}
	r.mu.Unlock()
	l := &Lease{
		Name:      name,
		Dir:       s.dir,
		Commit:    s.commit,
		Branch:    r.spec.Branch,
		Remote:    r.remote,
		Web:       r.web,
		Workspace: s.ws,
	}
	l.release = func() { m.release(r, s) }
	if r.local {
		l.local = true
		if g, err := m.localGit(ctx, s.ws); err == nil {
			l.git = g
			l.Commit = m.localCommit(ctx, s.ws)
			// A checkout below the top of its repository cites its own
			// paths; its links need the repository's.
			l.Web.Prefix, _ = s.ws.GitPrefix(ctx)
		}
		if l.Commit != "" && l.Web.Base != "" {
			l.unpushed = l.pushedNote(ctx)
		}
		r.mu.Lock()
		r.lastCommit = l.Commit
		r.mu.Unlock()
		if m.ix != nil && l.Commit != "" {
			// The commit its HEAD is at now is the current one, and pinned
			// in the same step.
			pinned = m.setIndexCommit(r, l.Commit, true)
			l.edited = s.ws.DiffersFrom(ctx, l.Commit, m.freshSince())
		}
	}
	m.holdIndex(r, l, pinned)
	return l, nil
}

// holdIndex gives the lease its commit's code index entry, pinned until
// Release.
func (m *Manager) holdIndex(r *repo, l *Lease, e *indexEntry) {
	if m.ix == nil {
		return
	}
	l.indexes = &r.indexes
	if e == nil {
		return
	}
	l.index = e
	release := l.release
	l.release = func() {
		m.unpinIndex(r, e)
		release()
	}
}

func (m *Manager) release(r *repo, s *snapshot) {
	r.mu.Lock()
	s.refs--
	drop := s.refs == 0 && s.retire
	r.mu.Unlock()
	if drop {
		m.discard(r, s)
	}
}

// retire stops handing out s (nil: nothing) and discards it: now if no
// lease holds it, else at the Release of its last lease. Whichever of the
// two sees no lease left under r.mu discards it, so it goes exactly once.
func (m *Manager) retire(r *repo, s *snapshot) {
	if s == nil {
		return
	}
	r.mu.Lock()
	s.retire = true
	drop := s.refs == 0
	r.mu.Unlock()
	if drop {
		m.discard(r, s)
	}
}

// discard closes a snapshot no one holds and, if it is a worktree of ours,
// deletes it (unless kept). Its entry in the clone's worktree list goes at
// the next checkout's prune. The last one after Close gives up the owner
// directory.
func (m *Manager) discard(r *repo, s *snapshot) {
	s.ws.Close()
	if !s.owned {
		return
	}
	r.mu.Lock()
	keep := s.keep
	r.mu.Unlock()
	if !keep {
		if err := removeWorktrees(s.dir); err != nil {
			m.log.Warn("remove an outdated worktree", "repo", r.spec.Name, "dir", s.dir, "err", err)
		}
	}
	r.mu.Lock()
	r.trees--
	o := r.ownerToDrop()
	r.mu.Unlock()
	o.drop()
}

// ownerToDrop takes r's owner directory away once r is closed and has no
// worktree left in use; nil otherwise. r.mu is held.
func (r *repo) ownerToDrop() *owner {
	if !r.closed || r.trees > 0 {
		return nil
	}
	o := r.owner
	r.owner = nil
	return o
}
