package repos

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/google/go-cmp/cmp"
)

// guard bounds a wait that should end at once; it only turns a hang into
// a failure and never orders events.
const guard = 30 * time.Second

func newManager(t testing.TB, specs []Spec, opts Options) *Manager {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	m, err := New(t.Context(), specs, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func acquire(t testing.TB, m *Manager, name string) *Lease {
	t.Helper()
	l, err := m.Acquire(t.Context(), name)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", name, err)
	}
	return l
}

// TestCloneThenSync clones a file:// remote at start, and after a new
// commit upstream and SyncNow a lease taken afterwards sees it.
func TestCloneThenSync(t *testing.T) {
	up := newRemote(t)
	first := up.commit("main", map[string]string{"README.md": "v1\n"})
	var rec syncRecorder
	data := t.TempDir()
	m := newManager(t, []Spec{{Name: "payments", URL: up.URL, Branch: "main", Channels: []string{"*"}}},
		Options{DataDir: data, OnSync: rec.record})

	l := acquire(t, m, "payments")
	if l.Commit != first {
		t.Errorf("Commit = %s, want %s", l.Commit, first)
	}
	if got := readFile(t, filepath.Join(l.Dir, "README.md")); got != "v1\n" {
		t.Errorf("README.md = %q, want v1", got)
	}
	if !strings.HasPrefix(l.Dir, filepath.Join(data, "repos", "payments")+string(filepath.Separator)) {
		t.Errorf("Dir = %s, want it under DataDir/repos/payments", l.Dir)
	}
	if l.Workspace == nil || l.Workspace.Dir() != l.Dir {
		t.Fatalf("Workspace is not over the lease's Dir")
	}
	// In a worktree .git is a file naming the clone's path on the host.
	if _, _, err := l.Workspace.Open(".git"); !errors.Is(err, tools.ErrDenied) {
		t.Errorf("Workspace.Open(.git) = %v, want ErrDenied", err)
	}
	if head := gitexectest.Git(t, l.Dir, "rev-parse", "HEAD"); head != first {
		t.Errorf("HEAD in Dir = %s, want %s", head, first)
	}
	if l.Remote != up.URL || l.Branch != "main" {
		t.Errorf("Remote, Branch = %q, %q; want %q, main", l.Remote, l.Branch, up.URL)
	}
	if l.Web != (cite.Web{}) {
		t.Errorf("Web = %+v, want none for a file:// remote", l.Web)
	}
	l.Release()

	second := up.commit("main", map[string]string{"README.md": "v2\n"})
	if err := m.SyncNow(t.Context(), "payments"); err != nil {
		t.Fatalf("SyncNow: %v", err)
	}
	l2 := acquire(t, m, "payments")
	defer l2.Release()
	if l2.Commit != second {
		t.Errorf("after SyncNow Commit = %s, want %s", l2.Commit, second)
	}
	if got := readFile(t, filepath.Join(l2.Dir, "README.md")); got != "v2\n" {
		t.Errorf("after SyncNow README.md = %q, want v2", got)
	}
	if _, err := os.Stat(l.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the outdated, unleased worktree %s still exists (err %v)", l.Dir, err)
	}
	if diff := cmp.Diff([]string{"payments: ok", "payments: ok"}, rec.get()); diff != "" {
		t.Errorf("OnSync calls (-want +got):\n%s", diff)
	}
	h := m.Health()[0]
	if !h.Available || h.Commit != second || h.LastError != "" || h.LastSync.IsZero() || h.Leases != 1 {
		t.Errorf("Health = %+v, want available at %s, no error, a sync time, 1 lease", h, second)
	}
}

// TestNeverMidTurn holds a lease while a sync moves the repo on: the held
// lease's directory keeps the old commit and content (a reader looping
// over it the whole time sees nothing else), a lease taken during the turn
// gets the new commit, and the old worktree goes when the turn releases.
func TestNeverMidTurn(t *testing.T) {
	up := newRemote(t)
	first := up.commit("main", map[string]string{"a.txt": "old\n"})
	m := newManager(t, []Spec{{Name: "r", URL: up.URL, Channels: []string{"*"}}}, Options{})

	turn := acquire(t, m, "r")
	stop := make(chan struct{})
	readerDone := make(chan string)
	go func() {
		// A turn's tool calls: read again and again until told to stop.
		var bad string
		for {
			select {
			case <-stop:
				readerDone <- bad
				return
			default:
			}
			if b, err := os.ReadFile(filepath.Join(turn.Dir, "a.txt")); err != nil || string(b) != "old\n" {
				bad = "read " + string(b) + " " + errString(err)
			}
		}
	}()

	second := up.commit("main", map[string]string{"a.txt": "new\n", "b.txt": "added\n"})
	synced := make(chan error, 1)
	go func() { synced <- m.SyncNow(context.Background(), "r") }()
	select {
	case err := <-synced:
		if err != nil {
			t.Fatalf("SyncNow: %v", err)
		}
	case <-time.After(guard):
		t.Fatal("SyncNow waited for the running turn; updates must not wait for leases")
	}

	during := acquire(t, m, "r")
	if during.Commit != second || during.Dir == turn.Dir {
		t.Errorf("lease taken after the sync: commit %s in %s, want %s in a new directory", during.Commit, during.Dir, second)
	}
	if got := readFile(t, filepath.Join(during.Dir, "a.txt")); got != "new\n" {
		t.Errorf("new lease a.txt = %q, want new", got)
	}
	during.Release()

	close(stop)
	if bad := <-readerDone; bad != "" {
		t.Errorf("the running turn saw a change: %s", bad)
	}
	if head := gitexectest.Git(t, turn.Dir, "rev-parse", "HEAD"); head != first {
		t.Errorf("held lease HEAD = %s, want %s", head, first)
	}
	if _, err := os.Stat(filepath.Join(turn.Dir, "b.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("b.txt from the new commit appeared in the held lease's Dir (err %v)", err)
	}
	if _, err := turn.Workspace.Files(t.Context()); err != nil {
		t.Errorf("held lease's Workspace after the sync: %v", err)
	}

	turn.Release()
	if _, err := os.Stat(turn.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old worktree survived its last lease (err %v)", err)
	}
	turn.Release() // twice is harmless
	if l := acquire(t, m, "r"); l.Commit != second {
		t.Errorf("after release Commit = %s, want %s", l.Commit, second)
	} else {
		l.Release()
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestAcquireDuringFetch: a fetch in flight (here: one holding the repo's
// sync lock for as long as the test likes) does not hold up leases.
func TestAcquireDuringFetch(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"a": "1"})
	m := newManager(t, []Spec{{Name: "r", URL: up.URL, Channels: []string{"*"}}}, Options{})
	r := m.repos["r"]
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	got := make(chan error, 1)
	go func() {
		l, err := m.Acquire(context.Background(), "r")
		if err == nil {
			l.Release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(guard):
		t.Fatal("Acquire waited for a fetch")
	}
}

// TestFetchFailureKeepsCheckout removes the remote after the clone: the
// sync fails, is reported (error, Health, OnSync, log), and leases keep
// getting the last good commit. A restart with the remote still gone
// serves what the last run fetched.
func TestFetchFailureKeepsCheckout(t *testing.T) {
	up := newRemote(t)
	good := up.commit("main", map[string]string{"a.txt": "good\n"})
	var rec syncRecorder
	var logs logtest.Buffer
	data := t.TempDir()
	spec := []Spec{{Name: "r", URL: up.URL, Branch: "main", Channels: []string{"*"}}}
	m := newManager(t, spec, Options{DataDir: data, OnSync: rec.record, Logger: newLogger(&logs)})

	if err := os.RemoveAll(up.Bare); err != nil {
		t.Fatal(err)
	}
	err := m.SyncNow(t.Context(), "r")
	if err == nil {
		t.Fatal("SyncNow against a deleted remote: no error")
	}
	if !strings.Contains(err.Error(), "git fetch") {
		t.Errorf("error %q does not say the fetch failed", err)
	}
	h := m.Health()[0]
	if !h.Available || h.Commit != good || h.LastError != err.Error() || h.LastSync.After(h.LastAttempt) || h.LastSync.Equal(h.LastAttempt) {
		t.Errorf("Health = %+v, want available at %s with the error and an older last sync", h, good)
	}
	calls := rec.get()
	if len(calls) != 2 || calls[0] != "r: ok" || !strings.HasPrefix(calls[1], "r: git fetch") {
		t.Errorf("OnSync calls = %q, want ok then the fetch error", calls)
	}
	if !strings.Contains(logs.String(), "keeping the last good checkout") {
		t.Errorf("log does not report the failure:\n%s", logs.String())
	}
	l := acquire(t, m, "r")
	if l.Commit != good || readFile(t, filepath.Join(l.Dir, "a.txt")) != "good\n" {
		t.Errorf("lease after a failed fetch: %s, want %s with its content", l.Commit, good)
	}
	l.Release()
	m.Close()

	again := newManager(t, spec, Options{DataDir: data})
	h = again.Health()[0]
	if !h.Available || h.Commit != good || h.LastError == "" {
		t.Errorf("after a restart with the remote gone: Health = %+v, want available at %s with the fetch error", h, good)
	}
	l = acquire(t, again, "r")
	if got := readFile(t, filepath.Join(l.Dir, "a.txt")); got != "good\n" {
		t.Errorf("after restart a.txt = %q", got)
	}
	l.Release()
}

// TestCloneFailureAtStart: one repo's remote does not exist yet. New
// succeeds, the other repo works, the broken one is unavailable with a
// clear error until a sync after the remote appears.
func TestCloneFailureAtStart(t *testing.T) {
	good := newRemote(t)
	good.commit("main", map[string]string{"a": "1"})
	later := newRemote(t)
	// The remote's directory is missing until the test "fixes" it.
	hidden := later.Bare + ".hidden"
	if err := os.Rename(later.Bare, hidden); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, []Spec{
		{Name: "good", URL: good.URL, Channels: []string{"*"}},
		{Name: "later", URL: later.URL, Channels: []string{"*"}},
	}, Options{SyncEvery: time.Minute})

	l := acquire(t, m, "good")
	l.Release()
	_, err := m.Acquire(t.Context(), "later")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire(later) = %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"later", "clone failed", "retried within seconds", "up to every 1m0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Acquire error %q lacks %q", err, want)
		}
	}
	h := m.Health()
	if !h[0].Available || h[1].Available || h[1].LastError == "" || h[1].Commit != "" {
		t.Errorf("Health = %+v, want good available, later unavailable with an error", h)
	}

	if err := os.Rename(hidden, later.Bare); err != nil {
		t.Fatal(err)
	}
	sha := later.commit("main", map[string]string{"b": "2"})
	if err := m.SyncNow(t.Context(), "later"); err != nil {
		t.Fatalf("SyncNow after the remote appeared: %v", err)
	}
	l = acquire(t, m, "later")
	defer l.Release()
	if l.Commit != sha {
		t.Errorf("Commit = %s, want %s", l.Commit, sha)
	}
}

// TestBranch follows the configured branch, not the remote's default,
// and an unset branch follows the default.
func TestBranch(t *testing.T) {
	up := newRemote(t)
	mainSHA := up.commit("main", map[string]string{"f": "main\n"})
	devSHA := up.commit("dev", map[string]string{"f": "dev\n"})
	m := newManager(t, []Spec{
		{Name: "dev", URL: up.URL, Branch: "dev", Channels: []string{"*"}},
		{Name: "default", URL: up.URL, Channels: []string{"*"}},
	}, Options{})
	for name, want := range map[string]string{"dev": devSHA, "default": mainSHA} {
		l := acquire(t, m, name)
		if l.Commit != want {
			t.Errorf("%s: Commit = %s, want %s", name, l.Commit, want)
		}
		l.Release()
	}
}

// TestReuseClone: a restart reuses the clone of the same URL, and replaces
// one of another URL.
func TestReuseClone(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"f": "1"})
	data := t.TempDir()
	spec := Spec{Name: "r", URL: up.URL, Channels: []string{"*"}}
	m := newManager(t, []Spec{spec}, Options{DataDir: data})
	m.Close()
	marker := filepath.Join(data, "repos", "r", "git", "kept")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m = newManager(t, []Spec{spec}, Options{DataDir: data})
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the clone was not reused: %v", err)
	}
	if n := len(mustReadDir(t, filepath.Join(data, "repos", "r", "trees"))); n != 1 {
		t.Errorf("trees/ holds %d worktrees after a restart, want 1", n)
	}
	m.Close()

	other := newRemote(t)
	sha := other.commit("main", map[string]string{"g": "2"})
	spec.URL = other.URL
	m = newManager(t, []Spec{spec}, Options{DataDir: data})
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a clone of another URL was kept (err %v)", err)
	}
	l := acquire(t, m, "r")
	defer l.Release()
	if l.Commit != sha {
		t.Errorf("Commit = %s, want %s from the new URL", l.Commit, sha)
	}
}

func mustReadDir(t testing.TB, dir string) []os.DirEntry {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ents
}

// TestLocalPath: a path repo is used in place, its commit read per lease,
// SyncNow does nothing, and neither Close nor Release ever deletes it.
func TestLocalPath(t *testing.T) {
	dir := t.TempDir()
	gitexectest.Git(t, dir, "init", "--quiet", "--initial-branch=main")
	gitexectest.Git(t, dir, "remote", "add", "origin", "https://bob:s3cr3t-pass@github.com/acme/payments.git")
	os.WriteFile(filepath.Join(dir, "x.go"), []byte("package x\n"), 0o644)
	gitexectest.Git(t, dir, "add", "x.go")
	gitexectest.Git(t, dir, "commit", "--quiet", "-m", "one")
	one := gitexectest.Git(t, dir, "rev-parse", "HEAD")

	m := newManager(t, []Spec{{Name: "local", Path: dir, Channels: []string{"*"}}}, Options{})
	l := acquire(t, m, "local")
	if l.Dir != dir || l.Commit != one {
		t.Errorf("lease = %s at %s, want %s at %s", l.Dir, l.Commit, dir, one)
	}
	if l.Remote != "https://github.com/acme/payments.git" {
		t.Errorf("Remote = %q, want the origin without credentials", l.Remote)
	}
	if want := (cite.Web{Base: "https://github.com/acme/payments", Kind: cite.KindGitHub}); l.Web != want {
		t.Errorf("Web = %+v, want %+v derived from the origin", l.Web, want)
	}
	if err := m.SyncNow(t.Context(), "local"); err != nil {
		t.Errorf("SyncNow(local) = %v, want nil", err)
	}
	gitexectest.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "two")
	two := gitexectest.Git(t, dir, "rev-parse", "HEAD")
	l2 := acquire(t, m, "local")
	if l2.Commit != two {
		t.Errorf("second lease Commit = %s, want %s", l2.Commit, two)
	}
	if h := m.Health()[0]; h.Commit != two || h.Source != dir || !h.Available {
		t.Errorf("Health = %+v", h)
	}
	m.Close()
	l.Release()
	l2.Release()
	if _, err := os.Stat(filepath.Join(dir, "x.go")); err != nil {
		t.Fatalf("the local checkout was touched: %v", err)
	}
	if _, err := m.Acquire(t.Context(), "local"); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close = %v, want ErrClosed", err)
	}
}

// TestNewErrors: configuration problems fail New, all at once.
func TestNewErrors(t *testing.T) {
	_, err := New(t.Context(), []Spec{
		{Name: "gone", Path: filepath.Join(t.TempDir(), "missing"), Channels: []string{"*"}},
		{Name: "tok", URL: "https://github.com/acme/x.git", TokenEnv: "ASKREPO_TEST_UNSET", Channels: []string{"*"}},
		{Name: "key", URL: "git@github.com:acme/x.git", SSHKey: "/nonexistent/deploy_key", Channels: []string{"*"}},
		{Name: "deny", URL: "https://github.com/acme/x.git", Deny: []string{"[abc"}, Channels: []string{"*"}},
	}, Options{DataDir: t.TempDir(), Env: func(string) (string, bool) { return "", false }})
	if err == nil {
		t.Fatal("New: no error")
	}
	for _, want := range []string{
		"repository gone: path", "is not a directory",
		"repository tok: token_env: the environment variable ASKREPO_TEST_UNSET is not set",
		"repository key: ssh key /nonexistent/deploy_key: not a readable file",
		`repository deny: deny: workspace`, `deny pattern "[abc" is not a valid glob`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := New(t.Context(), []Spec{{Name: "u", URL: "https://h/x.git", Channels: []string{"*"}}}, Options{}); err == nil || !strings.Contains(err.Error(), "data directory") {
		t.Errorf("url repo without DataDir: %v", err)
	}
	if _, err := New(t.Context(), nil, Options{}); err == nil {
		t.Error("no specs: no error")
	}
}

// TestUnknownAcquire names the configured repos.
func TestUnknownAcquire(t *testing.T) {
	m := newManager(t, []Spec{{Name: "a", Path: t.TempDir(), Channels: []string{"*"}}}, Options{})
	_, err := m.Acquire(t.Context(), "b")
	if !errors.Is(err, ErrUnknownRepo) || !strings.Contains(err.Error(), "configured: a") {
		t.Errorf("Acquire(b) = %v", err)
	}
	if err := m.SyncNow(t.Context(), "b"); !errors.Is(err, ErrUnknownRepo) {
		t.Errorf("SyncNow(b) = %v", err)
	}
	if diff := cmp.Diff([]string{"a"}, m.Repos()); diff != "" {
		t.Error(diff)
	}
}

// TestRun syncs on the ticker until the context ends.
func TestRun(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"f": "1"})
	synced := make(chan string, 16)
	m := newManager(t, []Spec{{Name: "r", URL: up.URL, Channels: []string{"*"}}}, Options{
		SyncEvery: 10 * time.Millisecond,
		OnSync: func(name string, err error) {
			select {
			case synced <- name + errString(err):
			default: // the test has stopped listening
			}
		},
	})
	<-synced // the clone in New
	sha := up.commit("main", map[string]string{"f": "2"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	for m.Health()[0].Commit != sha {
		select {
		case got := <-synced:
			if got != "r" {
				t.Fatalf("sync: %s", got)
			}
		case <-time.After(guard):
			t.Fatal("Run did not sync")
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("Run did not return after cancel")
	}
}

// TestWebOverride: web_url and web_kind win over the remote.
func TestWebOverride(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"f": "1"})
	m := newManager(t, []Spec{
		{Name: "r", URL: up.URL, WebURL: "https://git.acme.internal/acme/r", WebKind: "forgejo", Channels: []string{"*"}},
	}, Options{})
	l := acquire(t, m, "r")
	defer l.Release()
	if want := (cite.Web{Base: "https://git.acme.internal/acme/r", Kind: cite.KindGitea}); l.Web != want {
		t.Errorf("Web = %+v, want %+v", l.Web, want)
	}
}

// TestCloseWhileLeased: Close leaves a leased worktree in place for the
// turn still running and deletes it at the release.
func TestCloseWhileLeased(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"f": "1"})
	m := newManager(t, []Spec{{Name: "r", URL: up.URL, Channels: []string{"*"}}}, Options{})
	l := acquire(t, m, "r")
	m.Close()
	if got := readFile(t, filepath.Join(l.Dir, "f")); got != "1" {
		t.Errorf("leased file after Close = %q", got)
	}
	if err := m.SyncNow(t.Context(), "r"); !errors.Is(err, ErrClosed) {
		t.Errorf("SyncNow after Close = %v, want ErrClosed", err)
	}
	l.Release()
	if _, err := os.Stat(l.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("worktree after the last release following Close: %v", err)
	}
}

// BenchmarkAcquireRelease is the per-turn cost of a lease: for a url repo
// a counter under a mutex; for a local path also a git rev-parse.
func BenchmarkAcquireRelease(b *testing.B) {
	up := newRemote(b)
	up.commit("main", map[string]string{"f": "1"})
	local := b.TempDir()
	gitexectest.Git(b, local, "init", "--quiet")
	gitexectest.Git(b, local, "commit", "--quiet", "--allow-empty", "-m", "x")
	m := newManager(b, []Spec{
		{Name: "url", URL: up.URL, Channels: []string{"*"}},
		{Name: "local", Path: local, Channels: []string{"*"}},
	}, Options{})
	for _, name := range []string{"url", "local"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				l, err := m.Acquire(b.Context(), name)
				if err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
		})
	}
}

// TestRunRetriesCloneWithBackoff: a repository whose clone failed at
// start is retried after 2s, then twice as long after each failure, up to
// SyncEvery, and back on SyncEvery once it is served. Run's waits are
// stepped by the test, so no wall time passes.
func TestRunRetriesCloneWithBackoff(t *testing.T) {
	up := newRemote(t)
	up.commit("main", map[string]string{"f": "1"})
	hidden := up.Bare + ".hidden"
	if err := os.Rename(up.Bare, hidden); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, []Spec{{Name: "r", URL: up.URL, Channels: []string{"*"}}}, Options{SyncEvery: time.Minute})
	if m.Health()[0].Available {
		t.Fatal("available before its remote exists")
	}
	type step struct {
		wait time.Duration
		fire chan time.Time
	}
	ctx, cancel := context.WithCancel(t.Context())
	steps := make(chan step)
	m.after = func(d time.Duration) <-chan time.Time {
		s := step{wait: d, fire: make(chan time.Time, 1)}
		select {
		case steps <- s:
		case <-ctx.Done():
		}
		return s.fire
	}
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	next := func() step {
		t.Helper()
		select {
		case s := <-steps:
			return s
		case <-time.After(guard):
			t.Fatal("Run did not wait for a next sync")
			return step{}
		}
	}
	var got []time.Duration
	for range 7 {
		s := next()
		got = append(got, s.wait)
		s.fire <- time.Now() // another failed clone
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waits between clone attempts (-want +got):\n%s", diff)
	}

	s := next()
	if err := os.Rename(hidden, up.Bare); err != nil {
		t.Fatal(err)
	}
	s.fire <- time.Now() // this attempt clones
	s = next()
	if !m.Health()[0].Available {
		t.Fatalf("Health = %+v after the remote appeared", m.Health()[0])
	}
	if s.wait != time.Minute {
		t.Errorf("wait once served = %s, want SyncEvery", s.wait)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("Run did not return after cancel")
	}
}

func TestNextRetry(t *testing.T) {
	for _, c := range []struct{ prev, limit, want time.Duration }{
		{0, time.Minute, 2 * time.Second},
		{2 * time.Second, time.Minute, 4 * time.Second},
		{40 * time.Second, time.Minute, time.Minute},
		{time.Minute, time.Minute, time.Minute},
		{0, time.Second, time.Second}, // SyncEvery below the first retry
	} {
		if got := nextRetry(c.prev, c.limit); got != c.want {
			t.Errorf("nextRetry(%s, %s) = %s, want %s", c.prev, c.limit, got, c.want)
		}
	}
}
