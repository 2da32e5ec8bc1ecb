package repos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/askrepo/askrepo/internal/flock"
)

// lockClone takes the lock of r's clone, DataDir/repos/<name>/sync.lock,
// waiting (until ctx is done) while another process holds it, and returns
// its release. It is held while the clone is made, replaced or fetched
// into, so two processes sharing DataDir never do that at once.
func (m *Manager) lockClone(ctx context.Context, r *repo) (func(), error) {
	if err := os.MkdirAll(r.root, 0o750); err != nil {
		return nil, fmt.Errorf("create the clone directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(r.root, "sync.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the clone's lock: %w", err)
	}
	err = flock.Wait(ctx, f, func() {
		m.log.Info("waiting for another process sharing the data directory to finish fetching", "repo", r.spec.Name)
	})
	if err != nil {
		f.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wait for another process's fetch: %w", err)
		}
		return nil, fmt.Errorf("lock the clone: %w", err)
	}
	return func() { f.Close() }, nil
}

// fetchedFile's modification time is the end of the clone's last
// successful fetch, by any process sharing DataDir.
func (r *repo) fetchedFile() string { return filepath.Join(r.root, "fetched") }

// recordFetch notes that the clone was fetched just now.
func (r *repo) recordFetch(m *Manager) {
	p, now := r.fetchedFile(), time.Now()
	err := os.WriteFile(p, nil, 0o600)
	if err == nil {
		err = os.Chtimes(p, now, now)
	}
	if err != nil {
		m.log.Warn("record the time of the fetch", "repo", r.spec.Name, "err", err)
	}
}

// recentTip is, for a one-shot process (Options.OneShot) that has no
// checkout yet, the commit the clone's branch is at when any process
// fetched it less than SyncEvery ago: one command after another, or one
// beside the service, uses the clone as it is, as the service would until
// its next sync, instead of paying a fetch per call. "" means fetch.
func (m *Manager) recentTip(ctx context.Context, r *repo) string {
	if !m.opts.OneShot || r.current() != "" {
		return ""
	}
	fi, err := os.Stat(r.fetchedFile())
	if err != nil {
		return ""
	}
	if age := time.Since(fi.ModTime()); age < 0 || age >= m.opts.SyncEvery {
		return ""
	}
	// The clone's check and its tip, side by side: a one-shot call
	// waits for both, and each is a git process of its own.
	var tip string
	var tipErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		tip, tipErr = m.tip(ctx, r)
	}()
	ok := r.ready || m.cloneOK(ctx, r)
	<-done
	if !ok || tipErr != nil {
		return ""
	}
	r.ready = true
	m.log.Debug("using the clone as last fetched", "repo", r.spec.Name, "fetched", fi.ModTime(), "commit", tip)
	return tip
}
