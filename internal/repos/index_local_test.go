package repos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/index"
)

// TestIndexLocalNarrowsOnlyWhenExact: a path checkout's files may differ
// from its commit, now or when its index read them. Its index narrows a
// search only when neither is so (a scan must find what is there now);
// otherwise the symbols are still served, with a note. A clone's index
// always narrows.
func TestIndexLocalNarrowsOnlyWhenExact(t *testing.T) {
	real := index.Indexer{Options: index.Options{Ctags: "off"}}
	files := map[string]string{"a.go": "package a\n\nfunc Retry() {}\n", "b.go": "package a\n"}
	narrows := func(t *testing.T, l *Lease, want bool) {
		t.Helper()
		idx := leaseIndex(t, l)
		got, ok := idx.Candidates([]string{"Retry"}, false)
		if ok != want || ok && (len(got) != 1 || got[0] != "a.go") {
			t.Errorf("Candidates = %q, %v; want narrowing %v (to a.go)", got, ok, want)
		}
		if len(idx.Definitions("Retry", false)) != 1 {
			t.Errorf("the index lost its symbols")
		}
		if noted := strings.Contains(idx.Note(), "differ from its commit"); noted == want {
			t.Errorf("Note() = %q; says the files differ: %v, want %v", idx.Note(), noted, !want)
		}
		// The index's text is what the commit holds: a search may read
		// it only where it would narrow, never over edits.
		th, holds := idx.(interface{ Text(string) ([]byte, bool) })
		if holds != want {
			t.Errorf("the index offers its text: %v, want %v", holds, want)
		}
		if holds {
			if b, ok := th.Text("a.go"); !ok || string(b) != files["a.go"] {
				t.Errorf("Text(a.go) = %q, %v", b, ok)
			}
		}
	}

	t.Run("clone", func(t *testing.T) {
		_, first, spec := appRemote(t, files)
		m := newManager(t, spec, Options{Indexer: real})
		waitIndex(t, m, "app", first, IndexReady)
		l := acquire(t, m, "app")
		defer l.Release()
		narrows(t, l, true)
	})

	t.Run("path checkout", func(t *testing.T) {
		dir := t.TempDir()
		head := gitexectest.Init(t, dir).Commit(gitexectest.Commit{Write: files})
		m := newManager(t, []Spec{{Name: "app", Path: dir, Channels: []string{"*"}}}, Options{Indexer: real})
		waitIndex(t, m, "app", head, IndexReady)
		for _, tc := range []struct {
			name    string
			edit    func()
			narrows bool
		}{
			{"clean", func() {}, true},
			{"a tracked file changed", func() { writeFile(t, filepath.Join(dir, "b.go"), "package a\n\nfunc Retry2() {}\n") }, false},
			{"only a new file", func() {
				writeFile(t, filepath.Join(dir, "b.go"), files["b.go"])
				writeFile(t, filepath.Join(dir, "c.go"), "package a\n")
			}, false},
			{"clean again", func() { os.Remove(filepath.Join(dir, "c.go")) }, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.edit()
				l := acquire(t, m, "app")
				defer l.Release()
				narrows(t, l, tc.narrows)
			})
		}
	})

	t.Run("path checkout indexed over edits", func(t *testing.T) {
		dir := t.TempDir()
		head := gitexectest.Init(t, dir).Commit(gitexectest.Commit{Write: files})
		writeFile(t, filepath.Join(dir, "b.go"), "package a\n\nfunc Edited() {}\n")
		data := t.TempDir()
		m := newManager(t, []Spec{{Name: "app", Path: dir, Channels: []string{"*"}}}, Options{Indexer: real, DataDir: data})
		waitIndex(t, m, "app", head, IndexReady)
		writeFile(t, filepath.Join(dir, "b.go"), files["b.go"]) // clean again, but the index holds the edit
		l := acquire(t, m, "app")
		defer l.Release()
		narrows(t, l, false)
		if _, err := os.Stat(filepath.Join(data, "index", "app", head)); err == nil {
			t.Error("an index built over edits was saved, to be trusted after a restart")
		}
	})
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOneShotListsAPathCheckoutOnce: a one-shot Manager starts listing a
// path checkout while it opens, before its lease, and that one listing
// serves the lease's check against HEAD and the call's own Files. A
// service lists when the lease is taken.
func TestOneShotListsAPathCheckoutOnce(t *testing.T) {
	real := index.Indexer{Options: index.Options{Ctags: "off"}}
	r := gitexectest.Init(t, "")
	head := r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n\nfunc Retry() {}\n"}})
	spec := []Spec{{Name: "app", Path: r.Dir, Channels: []string{"*"}}}
	data := t.TempDir()
	built := newManager(t, spec, Options{Indexer: real, DataDir: data})
	waitIndex(t, built, "app", head, IndexReady)
	built.Close()
	for _, tc := range []struct {
		name    string
		oneShot bool
	}{{"one-shot", true}, {"service", false}} {
		t.Run(tc.name, func(t *testing.T) {
			calls := gitexectest.LogCalls(t)
			lsFiles := func() int { return gitexectest.Count(calls(), "ls-files") }
			m := newManager(t, spec, Options{Indexer: real, OneShot: tc.oneShot, DataDir: data})
			waitIndex(t, m, "app", head, IndexReady)
			before := lsFiles()
			for deadline := time.Now().Add(10 * time.Second); tc.oneShot && before < 2 && time.Now().Before(deadline); before = lsFiles() {
				time.Sleep(5 * time.Millisecond)
			}
			if want := map[bool]int{true: 2, false: 0}[tc.oneShot]; before != want {
				t.Errorf("%d ls-files calls before the lease, want %d", before, want)
			}
			l := acquire(t, m, "app")
			defer l.Release()
			if _, err := l.Workspace.Files(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n := lsFiles(); n != 2 {
				t.Errorf("%d ls-files calls, want one listing (2):\n%s", n, strings.Join(calls(), "\n"))
			}
			if _, ok := leaseIndex(t, l).Candidates([]string{"Retry"}, false); !ok {
				t.Error("a clean checkout's index does not narrow")
			}
		})
	}
}

// TestOneShotWithoutIndexChecksNothingAgainstHead: with no code index to
// narrow with, a one-shot call's listing is only a listing: nothing
// compares git's index with HEAD.
func TestOneShotWithoutIndexChecksNothingAgainstHead(t *testing.T) {
	r := gitexectest.Init(t, "")
	r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a\n"}})
	calls := gitexectest.LogCalls(t)
	m := newManager(t, []Spec{{Name: "app", Path: r.Dir, Channels: []string{"*"}}}, Options{OneShot: true})
	// Once the early listing is under way, Files waits for it to end.
	for deadline := time.Now().Add(10 * time.Second); gitexectest.Count(calls(), "ls-files") < 2 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	l := acquire(t, m, "app")
	defer l.Release()
	if got, err := l.Workspace.Files(t.Context()); err != nil || len(got) != 1 {
		t.Fatalf("Files() = %q, %v", got, err)
	}
	ran := calls()
	if gitexectest.Count(ran, "ls-files") != 2 || gitexectest.Count(ran, "diff-index") != 0 {
		t.Errorf("want one listing (2 ls-files) and no diff-index:\n%s", strings.Join(ran, "\n"))
	}
}
