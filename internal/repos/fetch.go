package repos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/tools"
)

// retryFirst is the wait before the first retry of a repository that has
// no checkout yet; each failure doubles it, up to SyncEvery. A clone that
// failed at start for a passing reason (a network blip while the pod came
// up) is then served within seconds, not after a whole sync interval.
const retryFirst = 2 * time.Second

// SyncNow fetches repository name and moves new leases to the fetched
// commit, as one tick of Run does; leases already held are untouched. It
// returns the fetch's error, after recording it for Health. Local path
// repos are not synced: nil.
func (m *Manager) SyncNow(ctx context.Context, name string) error {
	r, ok := m.repos[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownRepo, name)
	}
	if r.local {
		return nil
	}
	return m.sync(ctx, r)
}

// Run fetches every url repo every SyncEvery until ctx is done, each repo
// on its own schedule so a slow remote does not delay the others. A repo
// with no checkout yet (its clone failed) is retried sooner: after 2s,
// then twice as long after each failure, up to SyncEvery. Failures are
// logged, recorded for Health and passed to OnSync; the last good checkout
// stays in use.
func (m *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range m.repos {
		if r.local {
			continue
		}
		wg.Go(func() {
			var retry time.Duration
			for {
				wait := m.opts.SyncEvery
				if r.current() == "" {
					retry = nextRetry(retry, m.opts.SyncEvery)
					wait = retry
				} else {
					retry = 0
				}
				select {
				case <-ctx.Done():
					return
				case <-m.after(wait):
					m.sync(ctx, r)
				}
			}
		})
	}
	wg.Wait()
}

// nextRetry doubles the wait before retrying a repo that has no checkout,
// from retryFirst up to limit.
func nextRetry(prev, limit time.Duration) time.Duration {
	if prev <= 0 {
		return min(retryFirst, limit)
	}
	return min(2*prev, limit)
}

// sync is one fetch-and-update of a url repo with its bookkeeping.
func (m *Manager) sync(ctx context.Context, r *repo) error {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return ErrClosed
	}
	// An index that failed before this sync is retried when due; one
	// that fails during it waits for the next.
	m.retryIndex(r)
	before := r.current()
	err := m.update(ctx, r)
	now := time.Now()
	r.mu.Lock()
	r.lastAttempt = now
	if err == nil {
		r.lastSync, r.lastErr = now, ""
	} else {
		r.lastErr = err.Error()
	}
	r.mu.Unlock()
	after := r.current()
	log := m.log.With("repo", r.spec.Name, "remote", r.remote)
	switch {
	case err != nil && after == "":
		log.Error("repository unavailable: clone failed; retrying within seconds, then less often", "err", err, "at_most_every", m.opts.SyncEvery.String())
	case err != nil:
		log.Warn("fetch failed; keeping the last good checkout", "err", err, "commit", after)
	case before != after:
		log.Info("checkout updated", "from", before, "to", after)
	default:
		log.Debug("checkout up to date", "commit", after)
	}
	if m.opts.OnSync != nil {
		m.opts.OnSync(r.spec.Name, err)
	}
	return err
}

func (r *repo) current() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur == nil {
		return ""
	}
	return r.cur.commit
}

// gitDir is the bare clone; worktrees live in trees/.
func (r *repo) gitDir() string { return filepath.Join(r.root, "git") }

func (r *repo) trackingRef() string {
	if r.spec.Branch == "" {
		return "refs/remotes/origin/HEAD"
	}
	return "refs/remotes/origin/" + r.spec.Branch
}

// update fetches the branch into the bare clone (no lease reads from it,
// so leases need not wait) and, when the tip moved, checks it out as a new
// worktree and makes that the one new leases get. A one-shot process
// whose clone was fetched recently enough uses it as it is (recentTip).
func (m *Manager) update(ctx context.Context, r *repo) error {
	tip := m.recentTip(ctx, r)
	if tip == "" {
		var err error
		if tip, err = m.fetch(ctx, r); err != nil {
			// Keep serving what we have; after a restart while the remote
			// is down, serve what the last run fetched.
			if r.current() == "" && tip != "" {
				if cerr := m.checkout(ctx, r, tip); cerr != nil {
					m.log.Warn("check out the last fetched commit", "repo", r.spec.Name, "err", cerr)
				}
			}
			return err
		}
	}
	if r.current() == tip {
		return nil
	}
	return m.checkout(ctx, r, tip)
}

// fetch brings the branch into the clone, made first if need be, and
// returns the commit it is at. When the fetch fails, the commit is the one
// the last fetch brought, if any. It holds the clone's lock throughout, so
// processes sharing DataDir take turns: a fetch running elsewhere is
// waited for (with ctx), not raced, which would lose a ref lock and fail.
func (m *Manager) fetch(ctx context.Context, r *repo) (string, error) {
	unlock, err := m.lockClone(ctx, r)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := m.ensureClone(ctx, r); err != nil {
		return "", err
	}
	fetchErr := m.runFetch(ctx, r)
	tip, err := m.tip(ctx, r)
	if fetchErr != nil {
		return tip, fetchErr
	}
	if err != nil {
		return "", fmt.Errorf("read the fetched commit: %w", err)
	}
	r.recordFetch(m)
	return tip, nil
}

// runFetch runs git fetch. A git process that does not take the clone's
// lock (an operator's own git command, an older version of the service)
// can still hold the ref a fetch updates: git then refuses to update it
// ("cannot lock ref", exit status 1), and the fetch is tried again, twice
// at most, after a short wait.
func (m *Manager) runFetch(ctx context.Context, r *repo) error {
	src := "HEAD"
	if r.spec.Branch != "" {
		src = "refs/heads/" + r.spec.Branch
	}
	fetch := gitCall{timeout: m.opts.GitTimeout, auth: &r.auth}
	for try := 1; ; try++ {
		_, err := fetch.run(ctx, "--git-dir="+r.gitDir(), "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
			"--end-of-options", "origin", "+"+src+":"+r.trackingRef())
		// git fetch dies (128) when it cannot fetch, and exits 1 when
		// it fetched but could not update a ref.
		if ge, ok := errors.AsType[*gitError](err); !ok || ge.code != 1 || try == 3 {
			return err
		}
		m.log.Info("another git process held a ref the fetch updates; fetching again", "repo", r.spec.Name, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-m.after(time.Duration(try) * 200 * time.Millisecond):
		}
	}
}

// tip is the commit the clone's tracking ref is at.
func (m *Manager) tip(ctx context.Context, r *repo) (string, error) {
	g := gitCall{timeout: m.opts.GitTimeout}
	return g.run(ctx, "--git-dir="+r.gitDir(), "rev-parse", "--verify", "--quiet", "--end-of-options", r.trackingRef()+"^{commit}")
}

// ensureClone makes sure r.gitDir is a bare clone of r.remote: one left by
// an earlier run is reused (only the missing objects are fetched); one of
// another URL, or a broken one, is replaced. The caller holds the clone's
// lock.
func (m *Manager) ensureClone(ctx context.Context, r *repo) error {
	if r.ready {
		return nil
	}
	g := gitCall{timeout: m.opts.GitTimeout}
	gd := r.gitDir()
	if _, err := os.Stat(gd); err == nil {
		if m.cloneOK(ctx, r) {
			r.ready = true
			return nil
		}
		m.log.Info("replacing a clone that is not of the configured remote", "repo", r.spec.Name, "dir", r.root)
		// Only the clone: trees/ may hold other processes' worktrees, and
		// those of the old clone go at the next sweep.
		os.Remove(r.fetchedFile())
		if err := os.RemoveAll(gd); err != nil {
			return fmt.Errorf("remove the old clone: %w", err)
		}
	}
	if _, err := g.run(ctx, "init", "--quiet", "--bare", "--end-of-options", gd); err != nil {
		return err
	}
	// The stored remote has no credentials: they come with each fetch.
	if _, err := g.run(ctx, "--git-dir="+gd, "config", "remote.origin.url", r.remote); err != nil {
		return err
	}
	r.ready = true
	return nil
}

// cloneOK says whether r.gitDir is a bare clone of r.remote.
func (m *Manager) cloneOK(ctx context.Context, r *repo) bool {
	g := gitCall{timeout: m.opts.GitTimeout}
	var bare string
	var berr error
	done := make(chan struct{})
	go func() { // two git processes, side by side
		defer close(done)
		bare, berr = g.run(ctx, "--git-dir="+r.gitDir(), "rev-parse", "--is-bare-repository")
	}()
	url, uerr := g.run(ctx, "--git-dir="+r.gitDir(), "config", "--get", "remote.origin.url")
	<-done
	return uerr == nil && berr == nil && url == r.remote && bare == "true"
}

// checkout makes a worktree at sha current: a new one in this process's
// owner directory, or, for a one-shot process, one at sha that a process
// now gone left (see sweep). The previous current snapshot is retired:
// deleted now if no lease holds it, or when its last lease is released.
func (m *Manager) checkout(ctx context.Context, r *repo, sha string) error {
	adopt := ""
	if m.opts.OneShot {
		adopt = sha
	}
	dir, removed := m.sweep(r, adopt)
	gd := r.gitDir()
	g := gitCall{timeout: m.opts.GitTimeout}
	// Records of worktrees removed here or by an earlier discard; a
	// one-shot call that removed none and adds none has none to prune.
	if dir == "" || removed {
		if _, err := g.run(ctx, "--git-dir="+gd, "worktree", "prune"); err != nil {
			m.log.Warn("prune worktrees", "repo", r.spec.Name, "err", err)
		}
	}
	if dir != "" {
		m.log.Debug("reusing a worktree an earlier run left", "repo", r.spec.Name, "commit", sha, "dir", dir)
	} else {
		o, err := m.ownerDir(r)
		if err != nil {
			return err
		}
		r.seq++
		dir = filepath.Join(o.dir, strconv.Itoa(r.seq)+"-"+shortSHA(sha))
		if _, err := g.run(ctx, "--git-dir="+gd, "worktree", "add", "--quiet", "--detach", "--end-of-options", dir, sha); err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("check out %s: %w", sha, err)
		}
	}
	wtGitDir, err := worktreeGitDir(dir, gd)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("check out %s: %w", sha, err)
	}
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{Deny: r.spec.Deny, Logger: m.opts.Logger, GitDir: wtGitDir, SecretsDir: m.opts.secretsDir(), Owned: true})
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	m.warm(ctx, ws)
	next := &snapshot{dir: dir, commit: sha, ws: ws, owned: true}
	r.mu.Lock()
	old := r.cur
	r.cur = next
	r.trees++
	r.mu.Unlock()
	m.retire(r, old)
	m.indexCommit(r, sha)
	return nil
}

// worktreeGitDir reads the git directory git just wrote into the .git
// file of worktree dir, and checks that it is one of the clone gd's own
// worktrees. The workspace then uses it as is: a worktree's .git file is
// the one that may point elsewhere, and this one was checked here.
func worktreeGitDir(dir, gd string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return "", fmt.Errorf("read the worktree's .git file: %w", err)
	}
	p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", errors.New("the worktree's .git file names no git directory")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("the worktree's git directory: %w", err)
	}
	own, err := filepath.EvalSymlinks(filepath.Join(gd, "worktrees"))
	if err != nil || filepath.Dir(real) != own {
		return "", errors.New("the worktree's .git file points outside the clone's worktrees")
	}
	return real, nil
}
