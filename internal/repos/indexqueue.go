package repos

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
)

// indexer runs the builds of every repository of a Manager, one at a
// time (a build takes the CPU of a core or two; the service must keep
// answering), each from the previous commit's index when there is one.
type indexer struct {
	impl Indexer
	dir  string // DataDir/index; "" keeps indexes in memory only
	log  *slog.Logger
	// mayDelete says whether saved indexes may be deleted now: always for
	// the service; for a OneShot Manager, only while no other process uses
	// DataDir (see presence.go).
	mayDelete func() bool

	ctx    context.Context // canceled by stop: a running build ends
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu    sync.Mutex
	queue []*repo
}

// startIndexer starts the builder; the end of ctx or Close stops it.
// Indexes are kept in DataDir/index, or only in memory without a DataDir.
func (m *Manager) startIndexer(ctx context.Context) {
	dir := ""
	if m.opts.DataDir != "" {
		if abs, err := filepath.Abs(filepath.Join(m.opts.DataDir, "index")); err == nil {
			dir = abs
		} else {
			m.log.Warn("code indexes are kept in memory only", "err", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	mayDelete := func() bool { return true }
	if dir != "" {
		m.claimPresence()
		if m.opts.OneShot {
			mayDelete = m.alone
		}
	}
	m.ix = &indexer{impl: m.opts.Indexer, dir: dir, log: m.log, mayDelete: mayDelete, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go m.runIndexer()
}

// stop cancels a running build and waits for the builder to return.
func (ix *indexer) stop() {
	ix.cancel()
	<-ix.done
}

// enqueue asks for an index of r's current commit.
func (ix *indexer) enqueue(r *repo) {
	ix.mu.Lock()
	ix.queue = append(ix.queue, r)
	ix.mu.Unlock()
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

func (ix *indexer) next() *repo {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.queue) == 0 {
		return nil
	}
	r := ix.queue[0]
	ix.queue = ix.queue[1:]
	return r
}

// run builds what is queued until stop.
func (m *Manager) runIndexer() {
	ix := m.ix
	defer close(ix.done)
	for {
		select {
		case <-ix.ctx.Done():
			return
		case <-ix.wake:
		}
		for r := ix.next(); r != nil && ix.ctx.Err() == nil; r = ix.next() {
			m.indexCurrent(ix.ctx, r)
		}
	}
}
