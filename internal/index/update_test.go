package index

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/tools"
)

func workspace(t testing.TB, dir string, opts tools.WorkspaceOptions) *tools.Workspace {
	t.Helper()
	ws, err := tools.NewWorkspace(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// TestUpdateEqualsBuild: after commits that edit, add, delete and rename
// files, make a kept file's content secret, and deny a directory, Update
// from the previous index gives exactly the index Build gives.
func TestUpdateEqualsBuild(t *testing.T) {
	r := gitexectest.Init(t, "")
	c1 := r.Commit(gitexectest.Commit{Write: map[string]string{
		"shop/client.go": clientGo,
		"cmd/main.go":    mainGo,
		"py/cart.py":     cartPy,
		"notes.txt":      envSecret,
		"docs/guide.md":  "Use the Client.\n",
		"old.go":         "package shop\n\nfunc Old() {}\n",
		"move.txt":       "moving text\n",
		"keep.bin":       "\x00binary",
	}})
	prev := build(t, workspace(t, r.Dir, tools.WorkspaceOptions{}), c1, Options{})
	if got := prev.Definitions("Old", false); len(got) != 1 {
		t.Fatalf("Old before: %v", got)
	}

	steps := []struct {
		name   string
		commit gitexectest.Commit
		opts   tools.WorkspaceOptions
		gone   []string
	}{
		{"edit, add, delete, rename", gitexectest.Commit{
			Write:  map[string]string{"shop/client.go": strings.Replace(clientGo, "func helper", "func Helper2() {}\n\nfunc helper", 1), "shop/new.go": "package shop\n\nvar Client2 = &Client{}\n"},
			Remove: []string{"old.go"},
			Rename: [2]string{"move.txt", "moved.txt"},
		}, tools.WorkspaceOptions{}, []string{"old.go", "move.txt"}},
		{"an unchanged file's content becomes a secret", gitexectest.Commit{
			Write: map[string]string{".env": envSecret},
			Force: true,
		}, tools.WorkspaceOptions{}, []string{"notes.txt", ".env"}},
		{"a directory is denied now", gitexectest.Commit{
			Write: map[string]string{"README.md": "read me\n"},
		}, tools.WorkspaceOptions{Deny: []string{"docs/"}}, []string{"docs/guide.md"}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			before := prev.Commit()
			c := r.Commit(step.commit)
			changed := strings.Fields(r.Git("diff", "--name-only", before, c))
			ws := workspace(t, r.Dir, step.opts)
			got, err := Update(t.Context(), prev, ws, c, changed, Options{MaxFileBytes: 1000})
			if err != nil {
				t.Fatal(err)
			}
			want := build(t, workspace(t, r.Dir, step.opts), c, Options{})
			if !bytes.Equal(encoded(t, got), encoded(t, want)) {
				t.Errorf("Update differs from Build:\nupdate %+v\nbuild  %+v", got.Stats(), want.Stats())
			}
			var paths []string
			for _, f := range got.Files() {
				paths = append(paths, f.Path)
			}
			for _, p := range step.gone {
				if slices.Contains(paths, p) {
					t.Errorf("%s is still indexed", p)
				}
			}
			prev = got
		})
	}
	if got := prev.Definitions("Helper2", false); len(got) != 1 {
		t.Errorf("Helper2 after: %v", got)
	}
	if got := prev.References("Client2"); len(got) != 1 || got[0].Path != "shop/new.go" {
		t.Errorf("References(Client2) = %v", got)
	}
}

// TestUpdateCtagsChanged: an index made without ctags is rebuilt, not
// updated, once ctags is there, so its other files get their symbols.
func TestUpdateCtagsChanged(t *testing.T) {
	ws, head := wallRepo(t)
	prev := build(t, ws, head, Options{Ctags: "off"})
	got, err := Update(t.Context(), prev, ws, head, nil, Options{MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got.Note() != "" || len(got.Definitions("Cart", false)) != 1 {
		t.Errorf("after ctags came: note %q, Cart %v", got.Note(), got.Definitions("Cart", false))
	}
}

// TestUpdateRereadsUnreadable: a file the previous build could not read
// is read again, as Build would.
func TestUpdateRereadsUnreadable(t *testing.T) {
	ws, head := wallRepo(t)
	prev := build(t, ws, head, Options{})
	want := encoded(t, prev)
	for i, f := range prev.files {
		if f.path == "shop/client.go" {
			prev.files[i].size = notRead
		}
	}
	got, err := Update(t.Context(), prev, ws, head, nil, Options{MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encoded(t, got), want) {
		t.Errorf("Update kept the unreadable file as it was: %+v", got.Stats())
	}
}
