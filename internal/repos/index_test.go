package repos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/symbols"
	"github.com/askrepo/askrepo/internal/tools"
)

// countingIndexer counts the calls into an Indexer and can hold builds
// until a test lets them go.
type countingIndexer struct {
	Indexer

	mu                     sync.Mutex
	builds, updates, loads int
	changed                [][]string
	// gate, when set, holds Build and Update until closed or canceled;
	// started hears of each held call.
	gate    chan struct{}
	started chan struct{}
	fail    error // returned by Build and Update when set
	stopped error // the context error a held call ended with
	// running and most count the calls in flight.
	running, most int
}

func (c *countingIndexer) hold(ctx context.Context) error {
	c.mu.Lock()
	gate, started, fail := c.gate, c.started, c.fail
	c.running++
	c.most = max(c.most, c.running)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.running--
		c.mu.Unlock()
	}()
	if fail != nil {
		return fail
	}
	if gate == nil {
		return nil
	}
	if started != nil {
		started <- struct{}{}
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		c.stopped = ctx.Err()
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *countingIndexer) Build(ctx context.Context, ws *tools.Workspace, commit string) (tools.CodeIndex, error) {
	c.mu.Lock()
	c.builds++
	c.mu.Unlock()
	if err := c.hold(ctx); err != nil {
		return nil, err
	}
	return c.Indexer.Build(ctx, ws, commit)
}

func (c *countingIndexer) Update(ctx context.Context, prev tools.CodeIndex, ws *tools.Workspace, commit string, changed []string) (tools.CodeIndex, error) {
	c.mu.Lock()
	c.updates++
	c.changed = append(c.changed, slices.Sorted(slices.Values(changed)))
	c.mu.Unlock()
	if err := c.hold(ctx); err != nil {
		return nil, err
	}
	return c.Indexer.Update(ctx, prev, ws, commit, changed)
}

func (c *countingIndexer) Load(ctx context.Context, path string, ws *tools.Workspace) (tools.CodeIndex, error) {
	c.mu.Lock()
	c.loads++
	c.mu.Unlock()
	return c.Indexer.Load(ctx, path, ws)
}

// counts returns builds, updates and loads so far.
func (c *countingIndexer) counts() [3]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return [3]int{c.builds, c.updates, c.loads}
}

// listIndexer is a small real Indexer: the files of the checkout (what
// list_files sees), saved as JSON.
type listIndexer struct{}

type listIndex struct {
	Rev   string   `json:"commit"`
	Paths []string `json:"files"`
}

func (x *listIndex) Commit() string                             { return x.Rev }
func (x *listIndex) Candidates([]string, bool) ([]string, bool) { return nil, false }
func (x *listIndex) Definitions(string, bool) []symbols.Symbol  { return nil }
func (x *listIndex) SymbolNames() []string                      { return nil }
func (x *listIndex) References(string) []symbols.Occurrence     { return nil }
func (x *listIndex) Note() string                               { return "" }
func (x *listIndex) Files() []tools.FileSymbols {
	out := make([]tools.FileSymbols, len(x.Paths))
	for i, p := range x.Paths {
		out[i] = tools.FileSymbols{Path: p}
	}
	return out
}

func (listIndexer) Build(ctx context.Context, ws *tools.Workspace, commit string) (tools.CodeIndex, error) {
	var paths []string
	err := fs.WalkDir(os.DirFS(ws.Dir()), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && d.IsDir() {
			return fs.SkipDir
		}
		if d.Name() == ".git" {
			return nil
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	return &listIndex{Rev: commit, Paths: paths}, err
}

func (l listIndexer) Update(ctx context.Context, _ tools.CodeIndex, ws *tools.Workspace, commit string, _ []string) (tools.CodeIndex, error) {
	return l.Build(ctx, ws, commit)
}

func (listIndexer) Save(idx tools.CodeIndex, path string) error {
	b, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644) // private() narrows it
}

func (listIndexer) Load(_ context.Context, path string, _ *tools.Workspace) (tools.CodeIndex, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var x listIndex
	if err := json.Unmarshal(b, &x); err != nil {
		return nil, fmt.Errorf("read the index: %w", err)
	}
	return &x, nil
}

func newCounting() *countingIndexer { return &countingIndexer{Indexer: listIndexer{}} }

// inners are the Indexers the lifecycle tests run over: the small one
// above, and the real one (without ctags, which the machine may lack).
var inners = map[string]Indexer{
	"list": listIndexer{},
	"real": index.Indexer{Options: index.Options{Ctags: "off"}},
}

// forEachIndexer runs test once over each of inners, counted.
func forEachIndexer(t *testing.T, test func(t *testing.T, newIndexer func() *countingIndexer)) {
	for name, inner := range inners {
		t.Run(name, func(t *testing.T) {
			test(t, func() *countingIndexer { return &countingIndexer{Indexer: inner} })
		})
	}
}

// appRemote is a remote with one commit of files on main, the commit, and
// the spec of repository "app" cloned from it.
func appRemote(t testing.TB, files map[string]string) (up remote, first string, spec []Spec) {
	t.Helper()
	up = newRemote(t)
	first = up.commit("main", files)
	return up, first, []Spec{{Name: "app", URL: up.URL, Branch: "main", Channels: []string{"*"}}}
}

// indexOnce runs a Manager over data until the index of commit is ready,
// as a service that is then stopped.
func indexOnce(t testing.TB, spec []Spec, data, commit string, ix Indexer) {
	t.Helper()
	m := newManager(t, spec, Options{DataDir: data, Indexer: ix})
	waitIndex(t, m, "app", commit, IndexReady)
	m.Close()
}

// waitIndex waits until repository name's index is in state at commit.
func waitIndex(t testing.TB, m *Manager, name, commit, state string) IndexHealth {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		for _, h := range m.Health() {
			if h.Name == name && h.Index != nil && h.Index.Commit == commit && h.Index.State == state {
				return *h.Index
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("index of %s at %s never %s; health: %+v", name, commit, state, m.Health())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// indexDir lists what the data directory holds for repository name.
func indexDir(t testing.TB, data, name string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(data, "index", name))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func leaseIndex(t testing.TB, l *Lease) tools.CodeIndex {
	t.Helper()
	idx, note := l.Index()
	if idx == nil {
		t.Fatalf("lease at %s has no index: %q", l.Commit, note)
	}
	if idx.Commit() != l.Commit {
		t.Fatalf("lease at %s got the index of %s", l.Commit, idx.Commit())
	}
	return idx
}

// TestIndexFollowsSync: a sync to a new commit updates the index from the
// previous commit's (with both sides of a rename), and the old index goes
// from memory and disk when its last lease is released, not before.
func TestIndexFollowsSync(t *testing.T) {
	forEachIndexer(t, testIndexFollowsSync)
}

func testIndexFollowsSync(t *testing.T, newIndexer func() *countingIndexer) {
	up, first, spec := appRemote(t, map[string]string{"a.go": "package a\n", "old.go": "package a\n"})
	data := t.TempDir()
	ix := newIndexer()
	m := newManager(t, spec, Options{DataDir: data, Indexer: ix})
	waitIndex(t, m, "app", first, IndexReady)
	held := acquire(t, m, "app")
	leaseIndex(t, held)

	second := up.Push("main", gitexectest.Commit{Write: map[string]string{"a.go": "package a\n\nfunc A() {}\n"}, Rename: [2]string{"old.go", "new.go"}})
	if err := m.SyncNow(t.Context(), "app"); err != nil {
		t.Fatal(err)
	}
	h := waitIndex(t, m, "app", second, IndexReady)
	if h.Files != 2 {
		t.Errorf("health files = %d, want 2", h.Files)
	}
	if got, want := ix.counts(), [3]int{1, 1, 0}; got != want {
		t.Errorf("builds, updates, loads = %v, want %v", got, want)
	}
	if got, want := ix.changed[0], []string{"a.go", "new.go", "old.go"}; !slices.Equal(got, want) {
		t.Errorf("changed = %q, want %q", got, want)
	}
	if got := indexDir(t, data, "app"); !slices.Equal(got, slices.Sorted(slices.Values([]string{first, second}))) {
		t.Errorf("index dir while the old lease is held = %q, want both commits", got)
	}
	leaseIndex(t, held) // still the first commit's
	held.Release()
	if got := indexDir(t, data, "app"); !slices.Equal(got, []string{second}) {
		t.Errorf("index dir after release = %q, want only %s", got, second)
	}
	x := &m.repos["app"].indexes
	x.mu.Lock()
	if _, ok := x.byID[first]; ok || len(x.byID) != 1 {
		t.Errorf("indexes in memory after release: %d, the first one's among them: %v", len(x.byID), ok)
	}
	x.mu.Unlock()
	l := acquire(t, m, "app")
	defer l.Release()
	var paths []string
	for _, f := range leaseIndex(t, l).Files() {
		paths = append(paths, f.Path)
	}
	if slices.Sort(paths); !slices.Equal(paths, []string{"a.go", "new.go"}) {
		t.Errorf("files of the updated index = %q, want a.go and new.go", paths)
	}
}

// TestIndexRestart: a new Manager over the same data directory loads the
// saved index instead of building it; when the remote moved while the
// service was down, it updates from the saved one.
func TestIndexRestart(t *testing.T) {
	forEachIndexer(t, testIndexRestart)
}

func testIndexRestart(t *testing.T, newIndexer func() *countingIndexer) {
	up, first, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
	data := t.TempDir()
	indexOnce(t, spec, data, first, newIndexer())

	again := newIndexer()
	m := newManager(t, spec, Options{DataDir: data, Indexer: again})
	waitIndex(t, m, "app", first, IndexReady)
	if got, want := again.counts(), [3]int{0, 0, 1}; got != want {
		t.Errorf("after a restart: builds, updates, loads = %v, want %v", got, want)
	}
	m.Close()

	second := up.commit("main", map[string]string{"b.go": "package a\n"})
	third := newIndexer()
	m = newManager(t, spec, Options{DataDir: data, Indexer: third})
	waitIndex(t, m, "app", second, IndexReady)
	if got, want := third.counts(), [3]int{0, 1, 1}; got != want {
		t.Errorf("after a restart at a new commit: builds, updates, loads = %v, want %v", got, want)
	}
	if got := indexDir(t, data, "app"); !slices.Equal(got, []string{second}) {
		t.Errorf("index dir = %q, want only %s", got, second)
	}
}

// TestIndexLeaseNeverWaits: a lease taken while its commit's index is
// built gets no index and the note at once; once it is ready, the same
// lease and later ones get it.
func TestIndexLeaseNeverWaits(t *testing.T) {
	forEachIndexer(t, testIndexLeaseNeverWaits)
}

func testIndexLeaseNeverWaits(t *testing.T, newIndexer func() *countingIndexer) {
	_, first, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
	ix := newIndexer()
	ix.gate, ix.started = make(chan struct{}), make(chan struct{}, 1)
	m := newManager(t, spec, Options{Indexer: ix})
	<-ix.started
	l := acquire(t, m, "app")
	defer l.Release()
	if idx, note := l.Index(); idx != nil || note != noteIndexBuilding {
		t.Errorf("Index() while building = %v, %q; want nil, %q", idx, note, noteIndexBuilding)
	}
	if h := waitIndex(t, m, "app", first, IndexBuilding); h.Files != 0 || !h.Built.IsZero() {
		t.Errorf("health while building = %+v", h)
	}
	if n := m.Health()[0].Leases; n != 1 {
		t.Errorf("health leases while building = %d, want 1 (the builder's hold is not a lease)", n)
	}
	close(ix.gate)
	waitIndex(t, m, "app", first, IndexReady)
	leaseIndex(t, l)
	later := acquire(t, m, "app")
	defer later.Release()
	leaseIndex(t, later)
}

// TestIndexOneBuildAtATime: the builds of several repositories run one
// after the other.
func TestIndexOneBuildAtATime(t *testing.T) {
	var specs []Spec
	var commits []string
	for _, name := range []string{"a", "b", "c"} {
		up := newRemote(t)
		commits = append(commits, up.commit("main", map[string]string{name + ".go": "package " + name + "\n"}))
		specs = append(specs, Spec{Name: name, URL: up.URL, Branch: "main", Channels: []string{"*"}})
	}
	ix := newCounting()
	ix.gate, ix.started = make(chan struct{}), make(chan struct{}, 3)
	m := newManager(t, specs, Options{Indexer: ix})
	<-ix.started
	// A builder that ran them together would start the others now.
	time.Sleep(100 * time.Millisecond)
	close(ix.gate)
	for i, s := range specs {
		waitIndex(t, m, s.Name, commits[i], IndexReady)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.most != 1 || ix.builds != 3 {
		t.Errorf("%d builds, at most %d at once; want 3, one at a time", ix.builds, ix.most)
	}
}

// TestIndexCorruptRebuilt: a saved index that does not load (garbage, cut
// short) is built again; one saved under another commit's name is refused,
// and the index of that commit updated from the right one.
func TestIndexCorruptRebuilt(t *testing.T) {
	forEachIndexer(t, func(t *testing.T, newIndexer func() *countingIndexer) {
		for _, tt := range []struct {
			name string
			// damage spoils the saved index of first in dir and returns
			// the commit the next start is at.
			damage    func(t *testing.T, up remote, dir, first string) string
			wantCalls [3]int // builds, updates, loads
			wantFiles int
		}{
			{"garbage", func(t *testing.T, _ remote, dir, first string) string {
				if err := os.WriteFile(filepath.Join(dir, first), []byte("\x00\x01 not an index"), 0o600); err != nil {
					t.Fatal(err)
				}
				return first
			}, [3]int{1, 0, 1}, 1},
			{"cut short", func(t *testing.T, _ remote, dir, first string) string {
				fi, err := os.Stat(filepath.Join(dir, first))
				if err == nil {
					err = os.Truncate(filepath.Join(dir, first), fi.Size()/2)
				}
				if err != nil {
					t.Fatal(err)
				}
				return first
			}, [3]int{1, 0, 1}, 1},
			{"another commit's", func(t *testing.T, up remote, dir, first string) string {
				second := up.commit("main", map[string]string{"b.go": "package a\n"})
				b, err := os.ReadFile(filepath.Join(dir, first))
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, second), b, 0o600)
				}
				if err != nil {
					t.Fatal(err)
				}
				return second
			}, [3]int{0, 1, 2}, 2},
		} {
			t.Run(tt.name, func(t *testing.T) {
				up, first, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
				data := t.TempDir()
				indexOnce(t, spec, data, first, newIndexer())
				at := tt.damage(t, up, filepath.Join(data, "index", "app"), first)

				ix := newIndexer()
				m := newManager(t, spec, Options{DataDir: data, Indexer: ix})
				waitIndex(t, m, "app", at, IndexReady)
				if got := ix.counts(); got != tt.wantCalls {
					t.Errorf("builds, updates, loads = %v, want %v", got, tt.wantCalls)
				}
				l := acquire(t, m, "app")
				defer l.Release()
				if files := leaseIndex(t, l).Files(); len(files) != tt.wantFiles {
					t.Errorf("files = %+v, want %d", files, tt.wantFiles)
				}
			})
		}
	})
}

// TestIndexStopCancelsBuild: Close, or the end of the context New was
// given (a service's shutdown), ends a running build through its context.
func TestIndexStopCancelsBuild(t *testing.T) {
	for _, closing := range []bool{true, false} {
		t.Run(fmt.Sprintf("close=%v", closing), func(t *testing.T) {
			_, _, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
			ix := newCounting()
			ix.gate, ix.started = make(chan struct{}), make(chan struct{}, 1)
			ctx, cancel := context.WithCancel(t.Context())
			m, err := New(ctx, spec, Options{DataDir: t.TempDir(), Indexer: ix})
			if err != nil {
				t.Fatal(err)
			}
			<-ix.started
			stopped := make(chan struct{})
			go func() {
				if closing {
					m.Close()
				} else {
					cancel()
					<-m.ix.done
				}
				close(stopped)
			}()
			select {
			case <-stopped:
			case <-time.After(guard):
				t.Fatal("the builder did not stop while a build ran")
			}
			m.Close()
			cancel()
			ix.mu.Lock()
			defer ix.mu.Unlock()
			if !errors.Is(ix.stopped, context.Canceled) {
				t.Errorf("the build ended with %v, want context.Canceled", ix.stopped)
			}
		})
	}
}

// TestIndexFailed: a failed build shows as failed in the health and the
// lease's note, with a short reason that carries nothing of the error.
func TestIndexFailed(t *testing.T) {
	_, first, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
	ix := newCounting()
	ix.fail = errors.New("open /srv/secret/host/path: permission denied")
	m := newManager(t, spec, Options{Indexer: ix})
	h := waitIndex(t, m, "app", first, IndexFailed)
	b, _ := json.Marshal(m.Health())
	if strings.Contains(string(b), "/srv") || strings.Contains(string(b), "permission") {
		t.Errorf("health carries the error: %s", b)
	}
	if h.Error == "" {
		t.Error("health of a failed index has no reason")
	}
	l := acquire(t, m, "app")
	defer l.Release()
	idx, note := l.Index()
	if want := fmt.Sprintf(noteIndexFailed, h.Error); idx != nil || note != want {
		t.Errorf("Index() = %v, %q; want nil, %q", idx, note, want)
	}
}

// TestIndexPrivate: everything under DataDir/index is the service's
// alone.
func TestIndexPrivate(t *testing.T) {
	forEachIndexer(t, testIndexPrivate)
}

func testIndexPrivate(t *testing.T, newIndexer func() *countingIndexer) {
	_, first, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
	data := t.TempDir()
	m := newManager(t, spec, Options{DataDir: data, Indexer: newIndexer()})
	waitIndex(t, m, "app", first, IndexReady)
	err := filepath.WalkDir(filepath.Join(data, "index"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexLocalHeadMoves: a path checkout whose HEAD moves gets the new
// commit's index, updated from the old one, at the next lease.
func TestIndexLocalHeadMoves(t *testing.T) {
	forEachIndexer(t, testIndexLocalHeadMoves)
}

func testIndexLocalHeadMoves(t *testing.T, newIndexer func() *countingIndexer) {
	dir := t.TempDir()
	repo := gitexectest.Init(t, dir)
	first := repo.Commit(gitexectest.Commit{Write: map[string]string{"sub/a.go": "package a\n", "top.txt": "x\n"}})
	ix := newIndexer()
	m := newManager(t, []Spec{{Name: "app", Path: filepath.Join(dir, "sub"), Channels: []string{"*"}}}, Options{Indexer: ix})
	waitIndex(t, m, "app", first, IndexReady)
	second := repo.Commit(gitexectest.Commit{Write: map[string]string{"sub/b.go": "package a\n", "top.txt": "y\n"}})
	l := acquire(t, m, "app")
	defer l.Release()
	if l.Commit != second {
		t.Fatalf("lease commit = %s, want %s", l.Commit, second)
	}
	waitIndex(t, m, "app", second, IndexReady)
	leaseIndex(t, l)
	if got, want := ix.counts(), [3]int{1, 1, 0}; got != want {
		t.Errorf("builds, updates, loads = %v, want %v", got, want)
	}
	if got, want := ix.changed[0], []string{"b.go"}; !slices.Equal(got, want) {
		t.Errorf("changed = %q, want %q (relative to the checkout, nothing outside it)", got, want)
	}
}

// TestIndexOff: without an Indexer, leases have no index and no note,
// and the health shows none.
func TestIndexOff(t *testing.T) {
	_, _, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
	data := t.TempDir()
	m := newManager(t, spec, Options{DataDir: data})
	l := acquire(t, m, "app")
	defer l.Release()
	if idx, note := l.Index(); idx != nil || note != "" {
		t.Errorf("Index() = %v, %q; want nil, empty", idx, note)
	}
	if h := m.Health()[0]; h.Index != nil {
		t.Errorf("health index = %+v, want none", h.Index)
	}
	if _, err := os.Stat(filepath.Join(data, "index")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("index directory exists without indexes: %v", err)
	}
}

// TestIndexPathLeasesOutOfOrder: two leases of a path checkout whose HEAD
// moved may make its new commit current for indexes before the checkout
// is recorded at it; the builder then skips it, and the next lease queues
// it again instead of leaving it "building" for good.
func TestIndexPathLeasesOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	repo := gitexectest.Init(t, dir)
	first := repo.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}})
	m := newManager(t, []Spec{{Name: "app", Path: dir, Channels: []string{"*"}}}, Options{Indexer: newCounting()})
	waitIndex(t, m, "app", first, IndexReady)
	r := m.repos["app"]
	next := repo.Commit(gitexectest.Commit{Write: map[string]string{"b.go": "package a\n"}})
	m.setIndexCommit(r, next, false) // the later lease, first; the checkout is recorded at first
	deadline := time.Now().Add(guard)
	for {
		r.indexes.mu.Lock()
		idle := !r.indexes.queued && r.indexes.busy == ""
		r.indexes.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the builder never took the queued commit")
		}
		time.Sleep(time.Millisecond)
	}
	l := acquire(t, m, "app")
	defer l.Release()
	waitIndex(t, m, "app", next, IndexReady)
	leaseIndex(t, l)
}

// TestWaitIndex: a command that may wait gets the index's state once the
// build ends, ready or failed; with indexes off, or no commit, it is told
// at once.
func TestWaitIndex(t *testing.T) {
	t.Run("ready", func(t *testing.T) {
		_, first, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
		ix := newCounting()
		ix.gate, ix.started = make(chan struct{}), make(chan struct{}, 1)
		m := newManager(t, spec, Options{Indexer: ix})
		<-ix.started
		short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if _, err := m.WaitIndex(short, "app"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WaitIndex while held = %v, want the context's end", err)
		}
		close(ix.gate)
		h, err := m.WaitIndex(t.Context(), "app")
		if err != nil || h.State != IndexReady || h.Commit != first {
			t.Errorf("WaitIndex = %+v, %v; want ready at %s", h, err, first)
		}
	})
	t.Run("failed", func(t *testing.T) {
		_, _, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
		ix := newCounting()
		ix.fail = errors.New("boom")
		m := newManager(t, spec, Options{Indexer: ix})
		if h, err := m.WaitIndex(t.Context(), "app"); err != nil || h.State != IndexFailed {
			t.Errorf("WaitIndex = %+v, %v; want failed", h, err)
		}
	})
	t.Run("off", func(t *testing.T) {
		_, _, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
		m := newManager(t, spec, Options{})
		if _, err := m.WaitIndex(t.Context(), "app"); !errors.Is(err, ErrNoIndex) {
			t.Errorf("WaitIndex = %v, want ErrNoIndex", err)
		}
	})
	t.Run("no commit", func(t *testing.T) {
		dir := t.TempDir()
		gitexectest.WriteFiles(t, dir, map[string]string{"a.go": "package a\n"})
		m := newManager(t, []Spec{{Name: "app", Path: dir, Channels: []string{"*"}}}, Options{Indexer: newCounting()})
		if _, err := m.WaitIndex(t.Context(), "app"); !errors.Is(err, ErrNoIndex) {
			t.Errorf("WaitIndex = %v, want ErrNoIndex", err)
		}
		l := acquire(t, m, "app")
		defer l.Release()
		if idx, note := l.Index(); idx != nil || note != noteIndexNoCommit {
			t.Errorf("Index() = %v, %q; want nil, %q", idx, note, noteIndexNoCommit)
		}
	})
}

// TestIndexFailedRetried: a failed build is tried again at the next sync,
// then after twice as many syncs each time it fails again.
func TestIndexFailedRetried(t *testing.T) {
	_, first, spec := appRemote(t, map[string]string{"a.go": "package a\n"})
	ix := newCounting()
	ix.fail = errors.New("git was busy")
	m := newManager(t, spec, Options{Indexer: ix})
	waitIndex(t, m, "app", first, IndexFailed)
	// syncThen syncs, waits for a build the sync started, and checks the
	// builds so far.
	syncThen := func(builds int, state string) {
		t.Helper()
		if err := m.SyncNow(t.Context(), "app"); err != nil {
			t.Fatal(err)
		}
		h, err := m.WaitIndex(t.Context(), "app")
		if err != nil {
			t.Fatal(err)
		}
		if got := ix.counts()[0]; got != builds || h.State != state {
			t.Fatalf("after a sync: %d builds, index %s; want %d, %s", got, h.State, builds, state)
		}
	}
	syncThen(2, IndexFailed) // the first sync after a failure retries
	syncThen(2, IndexFailed) // the second failure waits two syncs
	ix.mu.Lock()
	ix.fail = nil
	ix.mu.Unlock()
	syncThen(3, IndexReady)
}
