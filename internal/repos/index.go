package repos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/tools"
)

// Indexer builds, updates and stores the code index of one checkout at one
// commit; internal/index provides it. The Manager decides when: one index
// per repository per commit, made in the background whenever the commit
// new leases get changes, so a turn never waits on one.
type Indexer interface {
	// Build indexes ws, checked out at commit, from scratch.
	Build(ctx context.Context, ws *tools.Workspace, commit string) (tools.CodeIndex, error)
	// Update derives the index of commit from prev, the index of an
	// earlier commit, re-reading only the changed paths (`git diff
	// --name-only prev..commit`, relative to ws).
	Update(ctx context.Context, prev tools.CodeIndex, ws *tools.Workspace, commit string, changed []string) (tools.CodeIndex, error)
	// Save writes idx at path (one file or directory, created anew);
	// Load reads it back as the index of ws, failing on anything it
	// cannot trust.
	Save(idx tools.CodeIndex, path string) error
	Load(ctx context.Context, path string, ws *tools.Workspace) (tools.CodeIndex, error)
}

// Notes a tool result carries when it could not use the index of its
// lease's commit and scanned instead.
const (
	noteIndexBuilding = "the code index for this commit is still being built; results come from a full scan"
	noteIndexFailed   = "the code index for this commit could not be built: %s; results come from a full scan"
	noteIndexNoCommit = "this checkout is not at a git commit, so it has no code index; results come from a full scan"
)

// Index states, as /healthz shows them.
const (
	IndexBuilding = "building"
	IndexReady    = "ready"
	IndexFailed   = "failed"
)

// IndexHealth is the state of the code index of a repository's current
// commit, for /healthz. Error is a short reason without host paths; the
// full error is in the log.
type IndexHealth struct {
	State  string    `json:"state"`
	Commit string    `json:"commit"`
	Files  int       `json:"files,omitempty"`
	Built  time.Time `json:"built,omitzero"`
	// AgeSeconds is how long ago Built was; nil until built.
	AgeSeconds *int64 `json:"age_seconds,omitempty"`
	Error      string `json:"error,omitempty"`
}

// indexes is one repository's code indexes, by commit. An entry lives
// while a lease pins it, while its commit is the one new leases get, and,
// as the base the next commit's index is updated from, while it is the
// newest ready one; then it is dropped from memory and disk.
type indexes struct {
	mu      sync.Mutex
	current string // the commit new leases get
	byID    map[string]*indexEntry
	base    *indexEntry   // the newest ready entry
	queued  bool          // waiting in the builder's queue
	busy    string        // the commit the builder is on, if any
	settled chan struct{} // closed, and replaced, when a build ends
	swept   bool          // the disk was read for a base once
}

// indexEntry is the index of one commit, ready or not.
type indexEntry struct {
	commit string
	state  string
	idx    tools.CodeIndex // ready only
	files  int
	built  time.Time
	reason string // failed only: short, no host paths
	fails  int    // failed builds of this commit so far
	waited int    // syncs (path repos: leases) since the last failure
	pins   int    // leases holding it
}

// entry returns the entry of commit, adding a building one. Call with
// x.mu held.
func (x *indexes) entry(commit string) *indexEntry {
	e := x.byID[commit]
	if e == nil {
		e = &indexEntry{commit: commit, state: IndexBuilding}
		x.byID[commit] = e
	}
	return e
}

// keep reports whether e must stay. Call with x.mu held.
func (x *indexes) keep(e *indexEntry) bool {
	return e.pins > 0 || e.commit == x.current || e == x.base
}

// stale removes and returns the entries no longer kept. Call with x.mu
// held; delete their files after unlocking.
func (x *indexes) stale() []string {
	var gone []string
	for id, e := range x.byID {
		if !x.keep(e) {
			delete(x.byID, id)
			gone = append(gone, id)
		}
	}
	return gone
}

// lookup is a lease's view of its entry.
func (x *indexes) lookup(e *indexEntry) (tools.CodeIndex, string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch e.state {
	case IndexReady:
		return e.idx, ""
	case IndexFailed:
		return nil, fmt.Sprintf(noteIndexFailed, e.reason)
	}
	return nil, noteIndexBuilding
}

// health is the state of the current commit's index.
func (x *indexes) health(now time.Time) *IndexHealth {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.healthLocked(now)
}

// healthLocked is health with x.mu held.
func (x *indexes) healthLocked(now time.Time) *IndexHealth {
	e := x.byID[x.current]
	if e == nil {
		return nil
	}
	h := &IndexHealth{State: e.state, Commit: e.commit, Files: e.files, Built: e.built, Error: e.reason}
	if !e.built.IsZero() {
		age := int64(now.Sub(e.built) / time.Second)
		h.AgeSeconds = &age
	}
	return h
}

// indexCommit records that commit is now what new leases of r get, and
// queues its index. An empty commit (a path that is no git checkout) has
// none.
func (m *Manager) indexCommit(r *repo, commit string) {
	if m.ix == nil || commit == "" {
		return
	}
	m.setIndexCommit(r, commit, false)
}

// setIndexCommit makes commit r's current one for indexes, queueing its
// build, and with pin pins its entry for a lease in the same step.
func (m *Manager) setIndexCommit(r *repo, commit string, pin bool) *indexEntry {
	x := &r.indexes
	x.mu.Lock()
	x.current = commit
	e := x.entry(commit)
	x.retry(e)
	// Also when commit was current already: two leases of a path
	// checkout whose HEAD moved may have set it in the other order than
	// the builder saw, which then skipped it.
	queue := e.state == IndexBuilding && !x.queued && x.busy != commit
	x.queued = x.queued || queue
	if pin {
		e.pins++
	}
	gone := x.stale()
	x.mu.Unlock()
	m.ix.remove(r, gone)
	if queue {
		m.ix.enqueue(r)
	}
	return e
}

// maxRetryWait caps the syncs (path repos: leases) between retries of a
// failed build: with syncs every 5 minutes, about five hours.
const maxRetryWait = 64

// retry puts a failed e back to building when its retry is due: at the
// first sync after a failure, then after twice as many syncs each time, so
// a cause that passes (git busy, a ctags that hung) does not leave the
// tools scanning until the next commit, and one that stays costs a build
// every few hours. Call with x.mu held; the caller queues e.
func (x *indexes) retry(e *indexEntry) {
	if e.state != IndexFailed {
		return
	}
	e.waited++
	if e.waited < min(1<<(e.fails-1), maxRetryWait) {
		return
	}
	e.state, e.reason, e.waited = IndexBuilding, "", 0
}

// retryIndex retries the failed index of r's current commit when due; a
// sync calls it.
func (m *Manager) retryIndex(r *repo) {
	if m.ix == nil {
		return
	}
	x := &r.indexes
	x.mu.Lock()
	e := x.byID[x.current]
	queue := false
	if e != nil {
		x.retry(e)
		queue = e.state == IndexBuilding && !x.queued && x.busy != x.current
		x.queued = x.queued || queue
	}
	x.mu.Unlock()
	if queue {
		m.ix.enqueue(r)
	}
}

// pin holds the entry of commit for a lease.
func (x *indexes) pin(commit string) *indexEntry {
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(commit)
	e.pins++
	return e
}

// unpinIndex lets a lease's entry go, dropping it (and whatever else is
// no longer kept) when nothing else keeps it.
func (m *Manager) unpinIndex(r *repo, e *indexEntry) {
	x := &r.indexes
	x.mu.Lock()
	e.pins--
	gone := x.stale()
	x.mu.Unlock()
	m.ix.remove(r, gone)
}

// holdCurrent keeps r's current checkout from being deleted while its
// index is built; ok is false when it is not at commit any more (a newer
// one is queued) or is going away.
func (m *Manager) holdCurrent(r *repo, commit string) (ws *tools.Workspace, release func(), ok bool) {
	r.mu.Lock()
	s := r.cur
	at := ""
	if s != nil {
		at = s.commit
		if r.local {
			at = r.lastCommit
		}
	}
	if s == nil || s.retire || at != commit {
		r.mu.Unlock()
		return nil, nil, false
	}
	s.refs++
	s.held++
	r.mu.Unlock()
	return s.ws, func() {
		r.mu.Lock()
		s.held--
		r.mu.Unlock()
		m.release(r, s)
	}, true
}

// indexCurrent makes the index of r's current commit, unless it exists.
func (m *Manager) indexCurrent(ctx context.Context, r *repo) {
	x := &r.indexes
	x.mu.Lock()
	x.queued = false
	commit := x.current
	e := x.entry(commit)
	todo := e.state == IndexBuilding
	if todo {
		x.busy = commit
	}
	x.mu.Unlock()
	if !todo {
		return
	}
	defer func() {
		x.mu.Lock()
		x.busy = ""
		x.mu.Unlock()
	}()
	ws, release, ok := m.holdCurrent(r, commit)
	if !ok {
		return
	}
	defer release()
	start := time.Now()
	idx, how, err := m.ix.make(ctx, r, ws, commit)
	files := 0
	if err == nil {
		files = fileCount(idx)
	}
	log := m.log.With("repo", r.spec.Name, "commit", commit)
	if err != nil && ctx.Err() != nil {
		log.Info("code index build stopped", "reason", "shutting down")
		return
	}
	if err == nil {
		// Before the index is announced ready, so whoever sees it ready
		// (a restart's wait, a test) finds the directory already tidied
		// and anything written there after it left alone.
		m.ix.sweep(r)
	}
	x.mu.Lock()
	if err != nil {
		e.state, e.reason = IndexFailed, failReason(err)
		e.fails++
	} else {
		e.state, e.idx, e.built = IndexReady, idx, time.Now()
		e.files = files
		x.base = e
	}
	close(x.settled)
	x.settled = make(chan struct{})
	gone := x.stale()
	x.mu.Unlock()
	m.ix.remove(r, gone)
	if err != nil {
		log.Warn("code index failed; tools scan instead", "err", err)
		return
	}
	log.Info("code index ready", "how", how, "files", e.files, "duration", time.Since(start).Round(time.Millisecond).String())
}

// fileCounter is an index that can count its files without decoding its
// symbols, which a saved index leaves until a tool asks for them
// (index.Index.FileCount).
type fileCounter interface{ FileCount() int }

// fileCount is how many files idx lists.
func fileCount(idx tools.CodeIndex) int {
	if c, ok := idx.(fileCounter); ok {
		return c.FileCount()
	}
	return len(idx.Files())
}

// ErrNoIndex is wrapped by WaitIndex when a repository gets no code index:
// indexes are off, or its checkout is at no git commit.
var ErrNoIndex = errors.New("no code index")

// WaitIndex waits until the code index of repository name's current commit
// is ready or has failed, and returns its state. It is for a command that
// runs one tool and may wait (bot tool); a turn never waits for an index.
func (m *Manager) WaitIndex(ctx context.Context, name string) (IndexHealth, error) {
	r, ok := m.repos[name]
	if !ok {
		return IndexHealth{}, fmt.Errorf("%w %q", ErrUnknownRepo, name)
	}
	if m.ix == nil {
		return IndexHealth{}, fmt.Errorf("%s: %w: code indexes are off (BOT_INDEX)", name, ErrNoIndex)
	}
	x := &r.indexes
	for {
		x.mu.Lock()
		current, settled, h := x.current, x.settled, x.healthLocked(time.Now())
		x.mu.Unlock()
		switch {
		case current == "":
			return IndexHealth{}, fmt.Errorf("%s: %w: it has no checkout at a git commit", name, ErrNoIndex)
		case h != nil && h.State != IndexBuilding:
			return *h, nil
		}
		select {
		case <-ctx.Done():
			return IndexHealth{}, ctx.Err()
		case <-m.ix.done:
			return IndexHealth{}, ErrClosed
		case <-settled:
		}
	}
}

// failReason is what /healthz and a tool's note say of a failed build:
// the kind of failure, never the error itself, which may name host paths.
func failReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "it timed out"
	}
	return "see the service log"
}
