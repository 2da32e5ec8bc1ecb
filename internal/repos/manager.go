// Package repos owns the repositories the bot answers about: which ones
// exist (the repos section of BOT_CONFIG, or REPO_PATH alone), which
// channels may read which, and, for git URLs, a clone in the data
// directory kept current by periodic fetches.
//
// A turn works on a Lease: one checkout at one commit from start to end.
// Each commit a url repo moves to gets a fresh git worktree next to the
// clone; new leases get the newest one at once, while leases already held
// keep theirs until released, when an outdated worktree is deleted. So an
// update never waits for running turns, and a turn never waits for an
// update longer than it takes to swap a pointer.
//
// On disk, a url repo lives in DataDir/repos/<name>: git/ is a bare clone
// holding the objects (remote.origin.url without credentials), trees/ the
// worktrees leases point into, named <n>-<sha12>.
//
// Credentials for remotes come from the environment and reach git only
// through its environment: never argv, never a file in the clone, never a
// log line or an error (see auth).
//
// Every git command goes through internal/gitexec, and a path repo's git
// directory is the one its Workspace found and checked (tools.Workspace.Git).
//
// It imports internal/tools (the Workspace wall), internal/cite (web views
// for permalinks), internal/gitexec and internal/config, and nothing that
// talks to Slack or a model.
package repos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/tools"
)

// ErrUnknownRepo is wrapped when a name matches no configured repository.
var ErrUnknownRepo = errors.New("unknown repository")

// ErrUnavailable is wrapped by Acquire when a url repository has no
// checkout yet: its first clone failed and is retried at each sync.
var ErrUnavailable = errors.New("repository not available yet")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("repositories closed")

// Options configures New. Only DataDir is required, and only when a spec
// has a URL.
type Options struct {
	// DataDir holds the clones, under DataDir/repos/<name>.
	DataDir string
	// SyncEvery is the time between fetches in Run; zero means 5m.
	SyncEvery time.Duration
	// GitTimeout bounds each git command (a clone is one); zero means 10m.
	GitTimeout time.Duration
	// Logger receives sync results; credentials never appear. Nil discards.
	Logger *slog.Logger
	// Env looks up token_env and ssh_key_env; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// KnownHosts is a known_hosts file listing the ssh remotes' host keys
	// (BOT_SSH_KNOWN_HOSTS); only those keys are accepted. Empty trusts a
	// host's first key and keeps it in DataDir/known_hosts.
	KnownHosts string
	// OnSync, when set, is called after every sync of a url repo, with
	// nil or the (credential-free) error, e.g. to count failures.
	OnSync func(name string, err error)
}

// hostKeys is where ssh checks the host keys of ssh remotes.
func (o Options) hostKeys() hostKeys {
	return newHostKeys(o.KnownHosts, o.DataDir)
}

func newHostKeys(knownHosts, dataDir string) hostKeys {
	switch {
	case knownHosts != "":
		return hostKeys{File: knownHosts, Pinned: true}
	case dataDir != "":
		if abs, err := filepath.Abs(filepath.Join(dataDir, "known_hosts")); err == nil {
			return hostKeys{File: abs}
		}
	}
	return hostKeys{}
}

// Manager holds the configured repositories. It is safe for concurrent
// use.
type Manager struct {
	opts  Options
	log   *slog.Logger
	specs []Spec // config order
	repos map[string]*repo

	mu     sync.Mutex
	closed bool

	// after is time.After; tests step Run's waits through it.
	after func(time.Duration) <-chan time.Time
}

// retryFirst is the wait before the first retry of a repository that has
// no checkout yet; each failure doubles it, up to SyncEvery. A clone that
// failed at start for a passing reason (a network blip while the pod came
// up) is then served within seconds, not after a whole sync interval.
const retryFirst = 2 * time.Second

// repo is one configured repository and its state.
type repo struct {
	spec   Spec
	local  bool
	remote string // URL without credentials (url repos), or origin of a local checkout
	root   string // DataDir/repos/<name>; url repos only
	auth   auth
	web    cite.Web

	// syncMu serializes fetches and worktree changes of this repo.
	syncMu sync.Mutex
	ready  bool // the bare clone exists with the right remote (guarded by syncMu)
	seq    int  // names worktrees (guarded by syncMu)

	mu          sync.Mutex
	cur         *snapshot
	lastSync    time.Time
	lastAttempt time.Time
	lastErr     string
	lastCommit  string // local repos: the commit the last lease saw
}

// snapshot is one checkout that leases point into.
type snapshot struct {
	dir    string
	commit string
	ws     *tools.Workspace
	owned  bool // a worktree of ours, deleted when outdated; false for a local path
	refs   int
	retire bool // no longer handed out: close (and delete, if owned) at refs == 0
}

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
}

// Release ends the lease. It is safe to call more than once. When the
// lease was the last on an outdated worktree, that worktree is deleted
// before Release returns.
func (l *Lease) Release() { l.once.Do(l.release) }

// RepoHealth is one repository's state for /healthz.
type RepoHealth struct {
	Name string `json:"name"`
	// Source is the remote (without credentials) or the local path.
	Source    string `json:"source"`
	Available bool   `json:"available"`
	// Commit is what new leases get (local paths: what the last one saw).
	Commit string `json:"commit,omitempty"`
	// LastSync is the end of the last successful fetch; LastAttempt of the
	// last one, successful or not, and LastError its error, if any.
	LastSync    time.Time `json:"last_sync,omitzero"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	LastError   string    `json:"last_error,omitempty"`
	Leases      int       `json:"leases"`
}

// New validates specs, opens the local checkouts, and clones (or reuses and
// fetches) every url repo, in parallel. Problems of the configuration (an
// invalid spec, a missing local path, an unset token variable) fail New;
// a clone that fails (network, permissions) leaves that repo unavailable,
// reported by Health and Acquire, and retried by Run and SyncNow.
func New(ctx context.Context, specs []Spec, opts Options) (*Manager, error) {
	if err := Validate(specs); err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, errors.New("no repositories configured: set REPO_PATH, or list repos in the BOT_CONFIG file")
	}
	if opts.SyncEvery <= 0 {
		opts.SyncEvery = 5 * time.Minute
	}
	if opts.GitTimeout <= 0 {
		opts.GitTimeout = 10 * time.Minute
	}
	if opts.Env == nil {
		opts.Env = os.LookupEnv
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: opts, log: log.With("component", "repos"), specs: specs, repos: map[string]*repo{}, after: time.After}
	var errs []error
	for _, s := range specs {
		r := &repo{spec: s}
		var err error
		if s.Path != "" {
			err = m.openLocal(ctx, r)
		} else {
			r.remote, _, _ = cleanRemote(s.URL)
			r.auth, err = newAuth(s, opts.Env, opts.hostKeys())
			if opts.DataDir == "" {
				err = errors.Join(err, errNoDataDir)
			}
			// The deny-list is parsed per worktree; a bad pattern must fail
			// now, not at every sync.
			err = errors.Join(err, checkDeny(s.Deny))
			if abs, aerr := filepath.Abs(filepath.Join(opts.DataDir, "repos", s.Name)); aerr == nil {
				r.root = abs
			} else {
				err = errors.Join(err, aerr)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("repository %s: %w", s.Name, err))
		}
		r.web = m.webView(r)
		m.repos[s.Name] = r
	}
	if len(errs) > 0 {
		m.Close()
		return nil, errors.Join(errs...)
	}
	var wg sync.WaitGroup
	for _, r := range m.repos {
		if r.local {
			continue
		}
		wg.Go(func() {
			// Worktrees of an earlier run are held by no one now.
			if err := os.RemoveAll(filepath.Join(r.root, "trees")); err != nil {
				m.log.Warn("remove old worktrees", "repo", r.spec.Name, "err", err)
			}
			m.sync(ctx, r)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		m.Close()
		return nil, fmt.Errorf("clone repositories: %w", err)
	}
	return m, nil
}

// webView is the configured web view (Validate has checked it), or the
// one derived from the remote. Without one, answers still cite paths, only
// without links; that is worth a line in the log, not a failed start.
func (m *Manager) webView(r *repo) cite.Web {
	if r.spec.WebURL != "" {
		w, _ := cite.ParseWeb(r.spec.WebURL, cite.Kind(r.spec.WebKind))
		return w
	}
	if r.remote == "" {
		return cite.Web{}
	}
	w, err := cite.WebFromRemoteAs(r.remote, cite.Kind(r.spec.WebKind))
	if err != nil {
		m.log.Info("no web view for permalinks; set web_url (and web_kind) to link citations", "repo", r.spec.Name, "remote", r.remote, "reason", err)
		return cite.Web{}
	}
	return w
}

// openLocal prepares a local path repo: it must be a directory now, since
// nothing will create it later.
func (m *Manager) openLocal(ctx context.Context, r *repo) error {
	r.local = true
	abs, err := localDir(r.spec.Path)
	if err != nil {
		return err
	}
	ws, err := tools.NewWorkspace(abs, tools.WorkspaceOptions{Deny: r.spec.Deny, Logger: m.opts.Logger})
	if err != nil {
		return err
	}
	r.cur = &snapshot{dir: abs, ws: ws}
	// The checkout's repository is found and checked here, once, by its
	// Workspace: a .git file pointing elsewhere turns git off for it.
	g, err := m.localGit(ctx, ws)
	if err != nil {
		m.log.Info("serving a path repository without git history", "repo", r.spec.Name, "reason", err)
		return nil
	}
	if origin, err := g.run(ctx, "config", "--get", "remote.origin.url"); err == nil {
		r.remote, _, _ = cleanRemote(origin)
	}
	r.lastCommit = m.localCommit(ctx, ws)
	return nil
}

// localGit runs git in a checkout's own repository, as its Workspace found
// and checked it. The checkout is not the service's: the runner trusts
// its owner (safe.directory), as a container with a mounted checkout
// needs, and its config runs no program.
func (m *Manager) localGit(ctx context.Context, ws *tools.Workspace) (gitCall, error) {
	g, err := ws.Git(ctx)
	if err != nil {
		return gitCall{}, err
	}
	return gitCall{git: g, timeout: min(m.opts.GitTimeout, 30*time.Second)}, nil
}

func (m *Manager) localCommit(ctx context.Context, ws *tools.Workspace) string {
	g, err := m.localGit(ctx, ws)
	if err != nil {
		return ""
	}
	sha, err := g.run(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return ""
	}
	return sha
}

// Repos returns the names of all repositories, in configuration order.
func (m *Manager) Repos() []string {
	names := make([]string, len(m.specs))
	for i, s := range m.specs {
		names[i] = s.Name
	}
	return names
}

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
	}
	return l, nil
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

// discard closes a snapshot no one holds and, if it is a worktree of ours,
// deletes it. Its entry in the clone's worktree list goes at the next
// checkout's prune.
func (m *Manager) discard(r *repo, s *snapshot) {
	s.ws.Close()
	if !s.owned {
		return
	}
	if err := os.RemoveAll(s.dir); err != nil {
		m.log.Warn("remove an outdated worktree", "repo", r.spec.Name, "dir", s.dir, "err", err)
	}
}

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
// so this needs no lock) and, when the tip moved, checks it out as a new
// worktree and makes that the one new leases get.
func (m *Manager) update(ctx context.Context, r *repo) error {
	g := gitCall{timeout: m.opts.GitTimeout}
	if err := m.ensureClone(ctx, r); err != nil {
		return err
	}
	src := "HEAD"
	if r.spec.Branch != "" {
		src = "refs/heads/" + r.spec.Branch
	}
	fetch := g
	fetch.auth = &r.auth
	_, fetchErr := fetch.run(ctx, "--git-dir="+r.gitDir(), "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
		"--end-of-options", "origin", "+"+src+":"+r.trackingRef())
	tip, err := g.run(ctx, "--git-dir="+r.gitDir(), "rev-parse", "--verify", "--quiet", "--end-of-options", r.trackingRef()+"^{commit}")
	if fetchErr != nil {
		// Keep serving what we have; after a restart while the remote is
		// down, serve what the last run fetched.
		if r.current() == "" && err == nil {
			if cerr := m.checkout(ctx, r, tip); cerr != nil {
				m.log.Warn("check out the last fetched commit", "repo", r.spec.Name, "err", cerr)
			}
		}
		return fetchErr
	}
	if err != nil {
		return fmt.Errorf("read the fetched commit: %w", err)
	}
	if r.current() == tip {
		return nil
	}
	return m.checkout(ctx, r, tip)
}

// ensureClone makes sure r.gitDir is a bare clone of r.remote: one left by
// an earlier run is reused (only the missing objects are fetched); one of
// another URL, or a broken one, is replaced.
func (m *Manager) ensureClone(ctx context.Context, r *repo) error {
	if r.ready {
		return nil
	}
	g := gitCall{timeout: m.opts.GitTimeout}
	gd := r.gitDir()
	if _, err := os.Stat(gd); err == nil {
		url, uerr := g.run(ctx, "--git-dir="+gd, "config", "--get", "remote.origin.url")
		bare, berr := g.run(ctx, "--git-dir="+gd, "rev-parse", "--is-bare-repository")
		if uerr == nil && berr == nil && url == r.remote && bare == "true" {
			r.ready = true
			return nil
		}
		m.log.Info("replacing a clone that is not of the configured remote", "repo", r.spec.Name, "dir", r.root)
		if err := os.RemoveAll(r.root); err != nil {
			return fmt.Errorf("remove the old clone: %w", err)
		}
	}
	if err := os.MkdirAll(r.root, 0o750); err != nil {
		return fmt.Errorf("create the clone directory: %w", err)
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

// checkout adds a worktree at sha and makes it current. The previous
// current snapshot is retired: deleted now if no lease holds it, or when
// its last lease is released.
func (m *Manager) checkout(ctx context.Context, r *repo, sha string) error {
	g := gitCall{timeout: m.opts.GitTimeout}
	gd := r.gitDir()
	if _, err := g.run(ctx, "--git-dir="+gd, "worktree", "prune"); err != nil {
		m.log.Warn("prune worktrees", "repo", r.spec.Name, "err", err)
	}
	r.seq++
	dir := filepath.Join(r.root, "trees", strconv.Itoa(r.seq)+"-"+sha[:min(12, len(sha))])
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return fmt.Errorf("create the worktree directory: %w", err)
	}
	if _, err := g.run(ctx, "--git-dir="+gd, "worktree", "add", "--quiet", "--detach", "--end-of-options", dir, sha); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("check out %s: %w", sha, err)
	}
	wtGitDir, err := worktreeGitDir(dir, gd)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("check out %s: %w", sha, err)
	}
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{Deny: r.spec.Deny, Logger: m.opts.Logger, GitDir: wtGitDir})
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	next := &snapshot{dir: dir, commit: sha, ws: ws, owned: true}
	r.mu.Lock()
	old := r.cur
	r.cur = next
	drop := false
	if old != nil {
		old.retire = true
		drop = old.refs == 0
	}
	r.mu.Unlock()
	if drop {
		m.discard(r, old)
	}
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

// Health reports every repository, in configuration order.
func (m *Manager) Health() []RepoHealth {
	out := make([]RepoHealth, 0, len(m.specs))
	for _, s := range m.specs {
		r := m.repos[s.Name]
		r.mu.Lock()
		h := RepoHealth{
			Name:        s.Name,
			Source:      r.remote,
			Available:   r.cur != nil,
			LastSync:    r.lastSync,
			LastAttempt: r.lastAttempt,
			LastError:   r.lastErr,
		}
		if r.cur != nil {
			h.Commit = r.cur.commit
			h.Leases = r.cur.refs
		}
		if r.local {
			h.Source, h.Commit = r.cur.dir, r.lastCommit
		}
		r.mu.Unlock()
		out = append(out, h)
	}
	return out
}

// Close stops syncing and new leases, waiting for a sync in flight.
// Checkouts still leased stay until released; the rest are closed, and
// worktrees of ours deleted (the next start checks out afresh).
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	for _, r := range m.repos {
		r.syncMu.Lock()
		r.mu.Lock()
		s := r.cur
		drop := false
		if s != nil {
			s.retire = true
			drop = s.refs == 0
		}
		r.mu.Unlock()
		if drop {
			m.discard(r, s)
		}
		r.syncMu.Unlock()
	}
	return nil
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
