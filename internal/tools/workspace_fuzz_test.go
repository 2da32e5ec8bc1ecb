//go:build unix

package tools

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds are the paths a hostile or confused model would try first.
var fuzzSeeds = []string{
	"", ".", "..", "/", "a.txt", "./a.txt", "sub/../a.txt", "sub//b.txt", "sub/b.txt/",
	"../outside/secret.txt", "sub/../../outside/secret.txt", "/etc/passwd",
	"link_out_file", "link_out_dir/secret.txt", "link_abs", "devnull", "fifo",
	"link_in", "link_sub/b.txt", "sub/up", "notes.txt", "gitdir/config", "loop1",
	".env", "sub/.env.local", ".env.example", "id_rsa", ".git/config", "x.pem",
	"credentials-prod.json", "a.txt\x00", "\\..\\x", "sub/./../sub/b.txt", "...",
}

// fuzzWorkspace builds the confinement fixture once per fuzz target.
func fuzzWorkspace(f *testing.F) (ws *Workspace, parent, repo string) {
	parent, repo = confinementFixture(f)
	ws, err := NewWorkspace(repo, WorkspaceOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ws.Close() })
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add(repo + "/a.txt")
	f.Add(repo + "-secret/x.txt")
	f.Add(repo + "/../outside/secret.txt")
	return ws, parent, repo
}

// FuzzWorkspaceRel checks that Rel only ever returns a clean, local,
// not-denied path.
func FuzzWorkspaceRel(f *testing.F) {
	ws, _, _ := fuzzWorkspace(f)
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := ws.Rel(p)
		if err != nil {
			return
		}
		if rel != "." && (!filepath.IsLocal(rel) || filepath.Clean(rel) != rel) {
			t.Fatalf("Rel(%q) = %q: not a clean local path", p, rel)
		}
		if ws.Denied(rel) {
			t.Fatalf("Rel(%q) = %q: a denied path", p, rel)
		}
	})
}

// FuzzOpen checks the wall: any path either fails to open, or opens a
// regular file that really lies inside the checkout and is not denied,
// without ever blocking (the fixture has a FIFO).
func FuzzOpen(f *testing.F) {
	ws, _, repo := fuzzWorkspace(f)
	realRepo, err := filepath.EvalSymlinks(repo)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		file, fi, err := ws.Open(p)
		if err != nil {
			return
		}
		defer file.Close()
		if !fi.Mode().IsRegular() {
			t.Fatalf("Open(%q) returned a %v", p, fi.Mode())
		}
		rel, err := ws.Rel(p)
		if err != nil {
			t.Fatalf("Open(%q) succeeded but Rel failed: %v", p, err)
		}
		real, err := filepath.EvalSymlinks(filepath.Join(repo, rel))
		if err != nil {
			t.Fatalf("Open(%q) succeeded but %q does not resolve: %v", p, rel, err)
		}
		inside, err := filepath.Rel(realRepo, real)
		if err != nil || !filepath.IsLocal(inside) {
			t.Fatalf("Open(%q) opened %s, outside %s", p, real, realRepo)
		}
		if ws.Denied(filepath.ToSlash(inside)) {
			t.Fatalf("Open(%q) opened denied %s", p, inside)
		}
		b, _ := io.ReadAll(io.LimitReader(file, 64))
		if strings.Contains(string(b), "SECRET") {
			t.Fatalf("Open(%q) read a secret", p)
		}
	})
}
