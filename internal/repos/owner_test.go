package repos

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/flock"
	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
)

// die does to m what the end of its process does: its locks go, and
// nothing it left on disk is removed, then or at its Close.
func die(m *Manager) {
	for _, r := range m.repos {
		r.mu.Lock()
		if r.cur != nil {
			r.cur.keep = true
		}
		if r.owner != nil && r.owner.f != nil {
			r.owner.f.Close()
		}
		r.owner = nil
		r.mu.Unlock()
	}
}

// sharedData is a remote at a first commit of files, the spec of
// repository r over it, and a DataDir for the Managers of a test to share.
func sharedData(t *testing.T, files map[string]string) (up remote, first, data string, spec []Spec) {
	t.Helper()
	up = newRemote(t)
	first = up.commit("main", files)
	return up, first, t.TempDir(), []Spec{{Name: "r", URL: up.URL, Channels: []string{"*"}}}
}

// TestFlockIsPerOpenFile: a second open of a locked directory in the same
// process does not get its lock, so two Managers in one process (as the
// tests here run them) see each other as live, as two processes do; and
// closing the holder frees it.
func TestFlockIsPerOpenFile(t *testing.T) {
	dir := t.TempDir()
	a, err := lockDir(dir)
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if b, err := lockDir(dir); !errors.Is(err, flock.ErrLocked) {
		b.drop()
		t.Fatalf("second open's lock = %v, want flock.ErrLocked", err)
	}
	a.f.Close()
	b, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock after the holder closed: %v", err)
	}
	b.f.Close()
}

// TestTwoProcessesShareDataDir: a second Manager over the same DataDir
// (an operator's command beside the service) breaks neither the lease the
// first holds nor its later ones, while both fetch and check out.
func TestTwoProcessesShareDataDir(t *testing.T) {
	up, first, data, spec := sharedData(t, map[string]string{"a.txt": "one\n"})
	svc := newManager(t, spec, Options{DataDir: data})
	held := acquire(t, svc, "r")
	defer held.Release()

	cli := newManager(t, spec, Options{DataDir: data})
	l := acquire(t, cli, "r")
	if l.Dir == held.Dir {
		t.Errorf("both processes lease the same directory %s", l.Dir)
	}
	l.Release()
	up.commit("main", map[string]string{"a.txt": "two\n"})
	// Both fetch at once, again and again: they take turns, none fails.
	for i := range 4 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, m := range []*Manager{svc, cli} {
			wg.Go(func() { errs[j] = m.SyncNow(t.Context(), "r") })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: SyncNow: %v", i, err)
		}
		up.commit("main", map[string]string{"a.txt": strings.Repeat("x", i+3) + "\n"})
	}
	cli.Close()

	if got := readFile(t, filepath.Join(held.Dir, "a.txt")); got != "one\n" {
		t.Errorf("the service's held lease reads %q, want one", got)
	}
	if head := gitexectest.Git(t, held.Dir, "rev-parse", "HEAD"); head != first {
		t.Errorf("HEAD in the held lease = %s, want %s (its worktree record was dropped?)", head, first)
	}
	if err := svc.SyncNow(t.Context(), "r"); err != nil {
		t.Fatalf("the service's SyncNow after the other ended: %v", err)
	}
	later := acquire(t, svc, "r")
	defer later.Release()
	if got := readFile(t, filepath.Join(later.Dir, "a.txt")); got != "xxxxxx\n" {
		t.Errorf("the service's later lease reads %q", got)
	}
	if head := gitexectest.Git(t, later.Dir, "rev-parse", "HEAD"); head != later.Commit {
		t.Errorf("HEAD in the later lease = %s, want %s", head, later.Commit)
	}
}

// TestDeadOwnersTreesRemoved: what an ended process left (its directory,
// its worktree records) goes at the next start, and a live one's stays.
func TestDeadOwnersTreesRemoved(t *testing.T) {
	_, _, data, spec := sharedData(t, map[string]string{"f": "1"})
	live := newManager(t, spec, Options{DataDir: data})
	kept := acquire(t, live, "r")
	defer kept.Release()
	dead := newManager(t, spec, Options{DataDir: data})
	gone := acquire(t, dead, "r")
	gone.Release()
	die(dead)

	m := newManager(t, spec, Options{DataDir: data})
	l := acquire(t, m, "r")
	defer l.Release()
	if _, err := os.Stat(filepath.Dir(gone.Dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the ended process's directory %s is still there (err %v)", filepath.Dir(gone.Dir), err)
	}
	if _, err := os.Stat(filepath.Join(kept.Dir, "f")); err != nil {
		t.Errorf("the live process's worktree: %v", err)
	}
	list := gitexectest.Git(t, "", "--git-dir="+filepath.Join(data, "repos", "r", "git"), "worktree", "list", "--porcelain")
	if strings.Contains(list, gone.Dir) || !strings.Contains(list, kept.Dir) || !strings.Contains(list, l.Dir) {
		t.Errorf("worktree list = %s\nwant %s and %s, not %s", list, kept.Dir, l.Dir, gone.Dir)
	}
}

// oneShotFixture is a clone fetched by a service that has ended, at
// commit first, while the remote has moved on to second.
func oneShotFixture(t *testing.T) (data string, spec []Spec, first, second string) {
	t.Helper()
	up, first, data, spec := sharedData(t, map[string]string{"f": "1"})
	newManager(t, spec, Options{DataDir: data}).Close()
	second = up.commit("main", map[string]string{"f": "2"})
	return data, spec, first, second
}

// TestOneShotUsesRecentFetch: a one-shot Manager uses a clone fetched
// less than SyncEvery ago as it is, and reuses the worktree the one
// before left; with an older fetch it fetches.
func TestOneShotUsesRecentFetch(t *testing.T) {
	data, spec, first, second := oneShotFixture(t)
	opts := Options{DataDir: data, OneShot: true, SyncEvery: time.Hour}
	one := newManager(t, spec, opts)
	l := acquire(t, one, "r")
	if l.Commit != first {
		t.Errorf("Commit = %s, want %s as fetched, without a fetch", l.Commit, first)
	}
	left := l.Dir
	l.Release()
	one.Close()
	if _, err := os.Stat(filepath.Join(left, "f")); err != nil {
		t.Fatalf("a one-shot Close removed its worktree: %v", err)
	}

	two := newManager(t, spec, opts)
	l = acquire(t, two, "r")
	if l.Dir != left || l.Commit != first {
		t.Errorf("lease at %s (%s), want the worktree left at %s (%s)", l.Dir, l.Commit, left, first)
	}
	l.Release()
	two.Close()

	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(data, "repos", "r", "fetched"), old, old); err != nil {
		t.Fatal(err)
	}
	three := newManager(t, spec, opts)
	l = acquire(t, three, "r")
	defer l.Release()
	if l.Commit != second || readFile(t, filepath.Join(l.Dir, "f")) != "2" {
		t.Errorf("with a fetch two hours old: Commit = %s, want %s, fetched", l.Commit, second)
	}
	if _, err := os.Stat(left); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the worktree of the old commit left by an ended process is still there (err %v)", err)
	}
}

// TestOneShotNeverAdoptsAStranger: what an ended process seems to have
// left under trees/ is reused only if it is a worktree git finished adding
// for this clone, in that very directory, at the commit wanted. Anything
// else is removed, without following a symlink out of trees/.
func TestOneShotNeverAdoptsAStranger(t *testing.T) {
	up, old, data, spec := sharedData(t, map[string]string{"f": "old"})
	svc := newManager(t, spec, Options{DataDir: data})
	tip := up.commit("main", map[string]string{"f": "tip"})
	if err := svc.SyncNow(t.Context(), "r"); err != nil {
		t.Fatal(err)
	}
	svc.Close()
	gd := filepath.Join(data, "repos", "r", "git")
	trees := filepath.Join(data, "repos", "r", "trees")
	name := "1-" + shortSHA(tip)
	addTree := func(dir, at string) {
		gitexectest.Git(t, "", "--git-dir="+gd, "worktree", "add", "--quiet", "--detach", dir, at)
	}
	outside := func() string { // a real worktree at tip, outside trees/
		d := filepath.Join(t.TempDir(), name)
		addTree(d, tip)
		return d
	}
	mkdir := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		mkdir(filepath.Dir(p))
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	symlink := func(target, p string) {
		mkdir(filepath.Dir(p))
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		// plant puts the leftover at trees/pdead/<name> and returns
		// what must survive the sweep ("" for nothing).
		plant func(p string) string
	}{
		{"a directory that is no worktree", func(p string) string {
			write(filepath.Join(p, "f"), "planted")
			return ""
		}},
		{"a .git file pointing out of the clone", func(p string) string {
			other := t.TempDir()
			write(filepath.Join(other, "HEAD"), tip+"\n")
			write(filepath.Join(p, ".git"), "gitdir: "+other+"\n")
			write(filepath.Join(p, "f"), "planted")
			return other
		}},
		{"a copy of a worktree of the clone", func(p string) string {
			src := outside()
			write(filepath.Join(src, "f"), "planted")
			if err := os.CopyFS(p, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			return src
		}},
		{"a worktree of another commit", func(p string) string {
			addTree(p, old)
			return ""
		}},
		{"a checkout git did not finish", func(p string) string {
			addTree(p, tip)
			wt, err := worktreeGitDir(p, gd)
			if err != nil {
				t.Fatal(err)
			}
			write(filepath.Join(wt, "locked"), "initializing")
			write(filepath.Join(p, "f"), "half")
			return ""
		}},
		{"a symlink to a worktree", func(p string) string {
			src := outside()
			symlink(src, p)
			return filepath.Join(src, "f")
		}},
		{"an owner directory that is a symlink", func(p string) string {
			dir := t.TempDir()
			addTree(filepath.Join(dir, name), tip)
			symlink(dir, filepath.Dir(p))
			return filepath.Join(dir, name, "f")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			leftover := filepath.Join(trees, "pdead", name)
			survivor := c.plant(leftover)
			m := newManager(t, spec, Options{DataDir: data, OneShot: true, SyncEvery: time.Hour})
			l := acquire(t, m, "r")
			defer func() { l.Release(); m.Close(); os.RemoveAll(trees) }()
			if l.Commit != tip || strings.HasPrefix(l.Dir, filepath.Join(trees, "pdead")) {
				t.Errorf("lease at %s (%s), want a new worktree at %s", l.Dir, l.Commit, tip)
			}
			if got := readFile(t, filepath.Join(l.Dir, "f")); got != "tip" {
				t.Errorf("f = %q, want tip", got)
			}
			if _, err := os.Lstat(filepath.Join(trees, "pdead")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the leftover is still under trees/ (err %v)", err)
			}
			if survivor != "" {
				if _, err := os.Stat(survivor); err != nil {
					t.Errorf("the sweep reached out of trees/: %v", err)
				}
			}
		})
	}
}

// TestFetchRetriesALostRefLock: a git process outside the service holding
// the ref a fetch updates makes the fetch wait and try again, not fail.
func TestFetchRetriesALostRefLock(t *testing.T) {
	up, _, data, spec := sharedData(t, map[string]string{"f": "1"})
	var logs logtest.Buffer
	m := newManager(t, spec, Options{DataDir: data, Logger: newLogger(&logs)})
	want := up.commit("main", map[string]string{"f": "2"})
	lock := filepath.Join(data, "repos", "r", "git", "refs", "remotes", "origin", "HEAD.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waits := 0
	m.after = func(time.Duration) <-chan time.Time {
		waits++
		os.Remove(lock) // the other git process is done
		c := make(chan time.Time, 1)
		c <- time.Now()
		return c
	}
	if err := m.SyncNow(t.Context(), "r"); err != nil {
		t.Fatalf("SyncNow: %v", err)
	}
	if l := acquire(t, m, "r"); l.Commit != want || waits != 1 {
		t.Errorf("Commit = %s after %d waits, want %s after 1", l.Commit, waits, want)
	} else {
		l.Release()
	}
	if !strings.Contains(logs.String(), "fetching again") {
		t.Errorf("the retry was not logged:\n%s", logs.String())
	}
}

// TestOneShotLeavesSavedIndexes: a one-shot Manager saves the index of its
// commit and, while another process uses DataDir, deletes none that
// process may hold or be writing; alone, it tidies up as the service does.
func TestOneShotLeavesSavedIndexes(t *testing.T) {
	_, first, data, spec := sharedData(t, map[string]string{"a.go": "package a\n"})
	svc := newManager(t, spec, Options{DataDir: data, Indexer: newCounting()})
	waitIndex(t, svc, "r", first, IndexReady)
	dir := filepath.Join(data, "index", "r")
	other := strings.Repeat("ab", 20) // a commit the service serves too
	others := []string{other, ".tmp-" + strings.Repeat("cd", 20)}
	if err := (listIndexer{}).Save(&listIndex{Rev: other}, filepath.Join(dir, other)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, others[1]), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	oneShot := func() []string {
		m := newManager(t, spec, Options{DataDir: data, OneShot: true, SyncEvery: time.Hour, Indexer: newCounting()})
		waitIndex(t, m, "r", first, IndexReady)
		m.Close()
		return indexDir(t, data, "r")
	}
	want := append(others, first)
	slices.Sort(want)
	if got := oneShot(); !slices.Equal(got, want) {
		t.Errorf("beside the service, DataDir/index/r holds %q, want %q", got, want)
	}
	svc.Close()
	if got := oneShot(); !slices.Equal(got, []string{first}) {
		t.Errorf("alone, DataDir/index/r holds %q, want only %s", got, first)
	}
}

// TestOneShotReuseRunsLittleGit: a one-shot call that reuses the clone
// as fetched and the worktree the call before left runs no fetch, no
// checkout and no prune: it only checks the clone and reads its tip.
func TestOneShotReuseRunsLittleGit(t *testing.T) {
	data, spec, first, _ := oneShotFixture(t)
	opts := Options{DataDir: data, OneShot: true, SyncEvery: time.Hour}
	one := newManager(t, spec, opts)
	acquire(t, one, "r").Release()
	one.Close()

	argv, _ := wrapGit(t)
	two := newManager(t, spec, opts)
	l := acquire(t, two, "r")
	defer l.Release()
	if l.Commit != first {
		t.Fatalf("Commit = %s, want %s", l.Commit, first)
	}
	b, err := os.ReadFile(argv)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.TrimSpace(string(b))
	for _, cmd := range []string{" fetch ", " worktree ", " clone "} {
		if strings.Contains(" "+strings.ReplaceAll(calls, "\n", " \n ")+" ", cmd) {
			t.Errorf("the reuse ran git%s:\n%s", cmd, calls)
		}
	}
	// The clone's own calls, not the listing of the checkout the call
	// starts (see Manager.warm).
	onClone := 0
	for line := range strings.Lines(calls) {
		if strings.Contains(line, "/repos/r/git ") {
			onClone++
		}
	}
	if onClone > 3 {
		t.Errorf("%d git calls on the clone, want at most 3 (its URL, that it is bare, its tip):\n%s", onClone, calls)
	}
}

// TestOneShotSkipsAWorktreeHalfRemoved: a process killed while it removed
// a worktree (its Close, a sweep) leaves part of the files, at a commit a
// one-shot process may want; that worktree must not pass for complete.
func TestOneShotSkipsAWorktreeHalfRemoved(t *testing.T) {
	_, first, data, spec := sharedData(t, map[string]string{"f": "1", "g": "2"})
	svc := newManager(t, spec, Options{DataDir: data})
	l := acquire(t, svc, "r")
	left := l.Dir
	l.Release()
	// The removal gets as far as the first entry it deletes other than
	// the .git file, then the process is killed.
	removeAll = func(p string) error {
		if ents, err := os.ReadDir(p); err == nil {
			for _, e := range ents {
				if e.Name() != ".git" {
					return os.RemoveAll(filepath.Join(p, e.Name()))
				}
			}
		}
		return nil
	}
	svc.Close()
	removeAll = os.RemoveAll
	if _, err := os.Stat(left); err != nil {
		t.Fatalf("the removal cut short left nothing: %v", err)
	}

	m := newManager(t, spec, Options{DataDir: data, OneShot: true, SyncEvery: time.Hour})
	l = acquire(t, m, "r")
	defer l.Release()
	if l.Commit != first {
		t.Fatalf("Commit = %s, want %s", l.Commit, first)
	}
	for _, f := range []string{"f", "g"} {
		if _, err := os.Stat(filepath.Join(l.Dir, f)); err != nil {
			t.Errorf("the lease's worktree %s (left at %s) misses %s: %v", l.Dir, left, f, err)
		}
	}
}
