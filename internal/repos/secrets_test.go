package repos

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/tools"
)

// Every Workspace the manager makes keeps its secret blobs in
// DataDir/secrets, private to the service, and none in the checkout.
func TestSecretBlobsKeptInDataDir(t *testing.T) {
	const secret = "API_KEY=kept-in-data-dir\n"
	files := map[string]string{"README.md": "hi\n", ".env": secret}
	for _, tc := range []struct {
		name string
		spec func(t *testing.T) Spec
	}{
		{"path", func(t *testing.T) Spec {
			dir := t.TempDir()
			gitexectest.Init(t, dir).Commit(gitexectest.Commit{Write: files})
			return Spec{Name: "app", Path: dir, Channels: []string{"*"}}
		}},
		{"url", func(t *testing.T) Spec {
			up := newRemote(t)
			up.commit("main", files)
			return Spec{Name: "app", URL: up.URL, Branch: "main", Channels: []string{"*"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			m := newManager(t, []Spec{tc.spec(t)}, Options{DataDir: data})
			l := acquire(t, m, "app")
			defer l.Release()
			if err := os.WriteFile(filepath.Join(l.Dir, "notes.txt"), []byte(secret), 0o644); err != nil {
				t.Fatal(err)
			}
			in, _ := json.Marshal(map[string]any{"path": "notes.txt"})
			if _, err := tools.NewReadFile(l.Workspace, tools.Options{}).Run(t.Context(), in); !errors.Is(err, tools.ErrDenied) {
				t.Errorf("read_file notes.txt = %v, want it refused", err)
			}
			saved, err := os.ReadDir(filepath.Join(data, "secrets"))
			if err != nil || len(saved) != 1 {
				t.Fatalf("DataDir/secrets holds %v (%v), want one file", saved, err)
			}
			if fi, err := saved[0].Info(); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v (%v), want mode 0600", saved[0].Name(), fi.Mode(), err)
			}
		})
	}
}
