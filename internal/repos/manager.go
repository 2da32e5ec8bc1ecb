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
// worktrees leases point into, named <owner>/<n>-<sha12>, where <owner> is
// a directory of the process that checked them out: processes sharing
// DataDir (the service, and one-shot commands run beside it) never remove
// each other's live worktrees (see owner.go). fetched records the last
// successful fetch, and sync.lock makes fetches take turns.
//
// Credentials for remotes come from the environment and reach git only
// through its environment: never argv, never a file in the clone, never a
// log line or an error (see auth).
//
// With an Indexer, every commit a repository is served at gets a code
// index, built in the background by one builder for all repositories
// (updated from the previous commit's when there is one), kept in
// DataDir/index/<name>/<commit>, and pinned by the leases at that commit;
// a lease hands its index to the tools only once it is ready (see
// Lease.Index), so a turn never waits for one. DataDir/procs marks the
// processes that use them (see presence.go).
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
	// Indexer, when set, gives every commit a repository is served at a
	// code index, made in the background and kept in DataDir/index (in
	// memory only without a DataDir); leases hand it to the tools.
	Indexer Indexer
	// OneShot is for a process that serves one call and exits (bot
	// tool): when the clone was fetched less than SyncEvery ago, by any
	// process, it is used without a fetch, and a worktree at its commit
	// that an ended process left is reused rather than a new one checked
	// out; Close leaves the current worktree for the next such process.
	OneShot bool
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

	ix       *indexer // nil without Options.Indexer
	presence *owner   // this process's mark in DataDir/procs, with an indexer

	// started is when New began: a OneShot Manager's listings from then
	// on are fresh enough for its one lease (see tools.Workspace.Warm).
	started time.Time

	// after is time.After; tests step Run's waits through it.
	after func(time.Duration) <-chan time.Time
}

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
	owner       *owner // this process's directory of worktrees; url repos
	trees       int    // owned snapshots not discarded yet
	closed      bool   // by Close: the owner directory goes with the last tree

	indexes indexes // code indexes by commit (see indexer)
}

// snapshot is one checkout that leases point into.
type snapshot struct {
	dir    string
	commit string
	ws     *tools.Workspace
	owned  bool // a worktree of ours, deleted when outdated; false for a local path
	refs   int
	held   int  // of refs, held by the indexer while it reads the checkout
	retire bool // no longer handed out: close (and delete, if owned) at refs == 0
	keep   bool // owned, but left on disk when discarded (OneShot's Close)
}

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
	// Index is the code index of Commit, when indexes are on.
	Index *IndexHealth `json:"index,omitempty"`
}

// New validates specs, opens the local checkouts, and clones (or reuses and
// fetches) every url repo, in parallel. Problems of the configuration (an
// invalid spec, a missing local path, an unset token variable) fail New;
// a clone that fails (network, permissions) leaves that repo unavailable,
// reported by Health and Acquire, and retried by Run and SyncNow.
//
// With an Indexer, code indexes are built until ctx is done or Close: a
// service passes the context its shutdown cancels, so a build does not
// take the CPU from the answers it is draining.
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
	m := &Manager{opts: opts, log: log.With("component", "repos"), specs: specs, repos: map[string]*repo{}, after: time.After, started: time.Now()}
	if opts.Indexer != nil {
		m.startIndexer(ctx)
	}
	var errs []error
	for _, s := range specs {
		r := &repo{spec: s, indexes: indexes{byID: map[string]*indexEntry{}, settled: make(chan struct{})}}
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
		// Worktrees of ended processes go at the first checkout (sweep).
		wg.Go(func() { m.sync(ctx, r) })
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
	ws, err := tools.NewWorkspace(abs, tools.WorkspaceOptions{Deny: r.spec.Deny, Logger: m.opts.Logger, SecretsDir: m.opts.secretsDir()})
	if err != nil {
		return err
	}
	r.cur = &snapshot{dir: abs, ws: ws}
	// The checkout's repository is found and checked here, once, by its
	// Workspace: a .git file pointing elsewhere turns git off for it.
	if _, err := m.localGit(ctx, ws); err != nil {
		m.log.Info("serving a path repository without git history", "repo", r.spec.Name, "reason", err)
		return nil
	}
	m.warm(ctx, ws)
	// Both read by the calls that found the repository: no git runs here,
	// and the first lease's HEAD is this one unless it has moved since.
	if origin := strings.TrimSpace(ws.GitOrigin(ctx)); origin != "" {
		r.remote, _, _ = cleanRemote(origin)
	}
	r.lastCommit = m.localCommit(ctx, ws)
	m.indexCommit(r, r.lastCommit)
	return nil
}

// warm starts listing a OneShot Manager's checkout while the rest opens:
// its one call is about to need the listing, and, when there is a code
// index to narrow with, its lease the check of the files against HEAD
// that comes with it (see freshSince).
func (m *Manager) warm(ctx context.Context, ws *tools.Workspace) {
	if m.opts.OneShot {
		ws.Warm(ctx, m.ix != nil)
	}
}

// freshSince is how recent a listing must be for a lease of a path
// checkout to take it as the files now: started by now, or, for a OneShot
// Manager, since it opened (see warm).
func (m *Manager) freshSince() time.Time {
	if m.opts.OneShot {
		return m.started
	}
	return time.Now()
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

// localCommit is the commit a checkout's HEAD is at now, "" when it has
// none or git cannot say. The Workspace runs git only when HEAD may have
// moved since it last looked (tools.Workspace.GitHead).
func (m *Manager) localCommit(ctx context.Context, ws *tools.Workspace) string {
	ctx, cancel := context.WithTimeout(ctx, min(m.opts.GitTimeout, 30*time.Second))
	defer cancel()
	sha, err := ws.GitHead(ctx)
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
			h.Leases = r.cur.refs - r.cur.held
		}
		if r.local {
			h.Source, h.Commit = r.cur.dir, r.lastCommit
		}
		r.mu.Unlock()
		if m.ix != nil {
			h.Index = r.indexes.health(time.Now())
		}
		out = append(out, h)
	}
	return out
}

// Close stops syncing and new leases, waiting for a sync in flight.
// Checkouts still leased stay until released; the rest are closed, and
// worktrees of ours deleted (the next start checks out afresh), but for
// the current one of a OneShot Manager, left for the next to reuse.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	if m.ix != nil {
		m.ix.stop()
	}
	defer m.presence.drop()
	for _, r := range m.repos {
		r.syncMu.Lock()
		r.mu.Lock()
		s := r.cur
		if s != nil && m.opts.OneShot {
			s.keep = true
		}
		r.closed = true
		r.mu.Unlock()
		m.retire(r, s)
		r.mu.Lock()
		o := r.ownerToDrop()
		r.mu.Unlock()
		o.drop()
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
