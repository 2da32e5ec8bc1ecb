package repos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/index"
)

// TestIndexLocalNeverNarrows: the files of a path checkout may change
// after its index read them, so its index never narrows a search (a scan
// must find what is there now); its symbols are still served, with a note
// once the checkout has uncommitted changes. A clone's index narrows.
func TestIndexLocalNeverNarrows(t *testing.T) {
	real := index.Indexer{Options: index.Options{Ctags: "off"}}
	files := map[string]string{"a.go": "package a\n\nfunc Retry() {}\n", "b.go": "package a\n"}

	_, first, spec := appRemote(t, files)
	clone := newManager(t, spec, Options{Indexer: real})
	waitIndex(t, clone, "app", first, IndexReady)
	cl := acquire(t, clone, "app")
	defer cl.Release()
	if got, ok := leaseIndex(t, cl).Candidates([]string{"Retry"}, false); !ok || len(got) != 1 || got[0] != "a.go" {
		t.Errorf("a clone's index: Candidates = %q, %v; want [a.go], true", got, ok)
	}

	dir := t.TempDir()
	head := gitexectest.Init(t, dir).Commit(gitexectest.Commit{Write: files})
	local := newManager(t, []Spec{{Name: "app", Path: dir, Channels: []string{"*"}}}, Options{Indexer: real})
	waitIndex(t, local, "app", head, IndexReady)

	for _, tc := range []struct {
		name   string
		edit   func()
		edited bool
	}{
		{"clean", func() {}, false},
		{"a tracked file changed", func() { write(t, filepath.Join(dir, "b.go"), "package a\n\nfunc Retry2() {}\n") }, true},
		{"a new file only", func() {
			write(t, filepath.Join(dir, "b.go"), files["b.go"])
			write(t, filepath.Join(dir, "c.go"), "package a\n")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.edit()
			l := acquire(t, local, "app")
			defer l.Release()
			idx := leaseIndex(t, l)
			if got, ok := idx.Candidates([]string{"Retry"}, false); ok {
				t.Errorf("a path checkout's index narrowed a search to %q", got)
			}
			if len(idx.Definitions("Retry", false)) != 1 {
				t.Errorf("a path checkout's index lost its symbols")
			}
			if got := strings.Contains(idx.Note(), "uncommitted changes"); got != tc.edited {
				t.Errorf("Note() = %q; says uncommitted changes: %v, want %v", idx.Note(), got, tc.edited)
			}
		})
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
