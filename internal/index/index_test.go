package index

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/symbols"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/google/go-cmp/cmp"
)

const (
	clientGo = `package shop

// Client talks to the shop.
type Client struct {
	Name string
}

// Do sends req.
func (c *Client) Do(req string) error {
	return helper(req) // Checkout in a comment
}

func helper(s string) error { return nil }
`
	mainGo = `package main

import "example.com/shop"

func main() {
	c := &shop.Client{Name: "Checkout"}
	c.Do("x")
	c.Do("y")
}
`
	cartPy = `class Cart:
    def checkout(self):
        return Client()
`
	envSecret = "API_TOKEN=hunter2-index-secret\n"
)

// wallRepo is a repository with code, and with secrets every way the wall
// knows: a .env, a key file, and the .env's content committed once more
// under a public name.
func wallRepo(t testing.TB) (*tools.Workspace, string) {
	t.Helper()
	r := gitexectest.Init(t, "")
	r.Commit(gitexectest.Commit{Write: map[string]string{
		"shop/client.go": clientGo,
		"cmd/main.go":    mainGo,
		"py/cart.py":     cartPy,
		".env":           envSecret,
		"deploy.key":     "-----BEGIN KEY-----\nhunter2-index-secret\n",
		"data.bin":       "\x00\x01hunter2-index-secret",
		// Names that look like options to ctags.
		"--help.js": "function helpMe() {}\n",
		"-x.py":     "def dash_me():\n    pass\n",
	}})
	// A symlink to the secret, under a public name.
	if err := os.Symlink(".env", filepath.Join(r.Dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	head := r.Commit(gitexectest.Commit{Write: map[string]string{"notes.txt": envSecret, "big.txt": strings.Repeat("hunter2-index-secret padding\n", 100)}})
	ws, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws, head
}

func build(t testing.TB, ws *tools.Workspace, commit string, opts Options) *Index {
	t.Helper()
	if opts.MaxFileBytes == 0 {
		opts.MaxFileBytes = 1000
	}
	ix, err := Build(t.Context(), ws, commit, opts)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

var secretPaths = []string{".env", "deploy.key", "notes.txt", "link.txt"}

// checkWall fails when any answer of ix names a secret file.
func checkWall(t *testing.T, ix *Index) {
	t.Helper()
	var seen []string
	cands, _ := ix.Candidates([]string{"hunter2-index-secret"}, false)
	seen = append(seen, cands...)
	cands, _ = ix.Candidates([]string{"API_TOKEN"}, true)
	seen = append(seen, cands...)
	for _, name := range append(ix.SymbolNames(), "API_TOKEN", "hunter2", "BEGIN", "KEY") {
		for _, s := range ix.Definitions(name, true) {
			seen = append(seen, s.Path)
		}
		for _, o := range ix.References(name) {
			seen = append(seen, o.Path)
		}
	}
	for _, f := range ix.Files() {
		seen = append(seen, f.Path)
	}
	for _, p := range secretPaths {
		if slices.Contains(seen, p) {
			t.Errorf("%s is in the index's answers", p)
		}
	}
}

func TestBuildWall(t *testing.T) {
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	checkWall(t, ix)
	// The binary and the large file are candidates for everything, as
	// search_code reads and then skips them; nothing else holds the text.
	got, ok := ix.Candidates([]string{"hunter2-index-secret"}, false)
	if want := []string{"big.txt", "data.bin"}; !ok || !slices.Equal(got, want) {
		t.Errorf("Candidates = %v, %v; want %v", got, ok, want)
	}
	binary, huge, unreadable := ix.Unindexed()
	if !slices.Equal(binary, []string{"data.bin"}) || !slices.Equal(huge, []string{"big.txt"}) || len(unreadable) != 0 {
		t.Errorf("Unindexed = %v, %v, %v; want [data.bin], [big.txt], []", binary, huge, unreadable)
	}
}

func TestBuildQueries(t *testing.T) {
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	if ix.Commit() != head {
		t.Errorf("Commit = %q, want %q", ix.Commit(), head)
	}
	for _, tc := range []struct {
		lits []string
		fold bool
		want []string
		ok   bool
	}{
		{[]string{"func (c *Client)"}, false, []string{"big.txt", "data.bin", "shop/client.go"}, true},
		{[]string{"CLIENT"}, true, []string{"big.txt", "cmd/main.go", "data.bin", "py/cart.py", "shop/client.go"}, true},
		{[]string{"Client", "checkout"}, true, []string{"big.txt", "cmd/main.go", "data.bin", "py/cart.py", "shop/client.go"}, true},
		{[]string{"Client", "main("}, false, []string{"big.txt", "cmd/main.go", "data.bin"}, true},
		{[]string{"no such text anywhere"}, false, []string{"big.txt", "data.bin"}, true},
		{[]string{"Do"}, false, nil, false},
		{nil, false, nil, false},
	} {
		got, ok := ix.Candidates(tc.lits, tc.fold)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("Candidates(%q, %v) = %v, %v; want %v, %v", tc.lits, tc.fold, got, ok, tc.want, tc.ok)
		}
	}

	where := func(ss []symbols.Symbol) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Path+":"+s.Kind+":"+s.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		fold bool
		want []string
	}{
		{"Client", false, []string{"shop/client.go:struct:Client"}},
		{"Client.Do", false, []string{"shop/client.go:method:Do"}},
		{"client.do", true, []string{"shop/client.go:method:Do"}},
		{"client.do", false, nil},
		{"Cart.checkout", false, []string{"py/cart.py:member:checkout"}},
		{"CHECKOUT", true, []string{"py/cart.py:member:checkout"}},
		{"nothing", true, nil},
		{"helpMe", false, []string{"--help.js:function:helpMe"}},
		{"dash_me", false, []string{"-x.py:function:dash_me"}},
	} {
		if got := where(ix.Definitions(tc.name, tc.fold)); !slices.Equal(got, tc.want) {
			t.Errorf("Definitions(%q, %v) = %v, want %v", tc.name, tc.fold, got, tc.want)
		}
	}

	refs := ix.References("Client")
	want := []symbols.Occurrence{
		{Path: "cmd/main.go", Line: 6, Text: `c := &shop.Client{Name: "Checkout"}`},
		{Path: "py/cart.py", Line: 3, Text: "return Client()"},
		{Path: "shop/client.go", Line: 4, Def: true, Text: "type Client struct {"},
		{Path: "shop/client.go", Line: 9, Text: "func (c *Client) Do(req string) error {"},
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("References(Client) (-want +got):\n%s", diff)
	}
	if got := ix.References("Checkout"); len(got) != 0 {
		t.Errorf("References(Checkout) = %v: a Go string or comment counted", got)
	}

	files := ix.Files()
	var order []string
	for _, f := range files {
		order = append(order, f.Path)
	}
	if len(files) == 0 || files[0].Path != "shop/client.go" || files[0].Refs != 1 {
		t.Errorf("Files: first %+v, want shop/client.go with 1 reference (Client in cmd/main.go; members, Python and the file itself do not count) (order %v)", files[0], order)
	}
	if ix.Note() != "" {
		t.Errorf("Note = %q, want none with ctags installed", ix.Note())
	}
}

func TestBuildWithoutCtags(t *testing.T) {
	ws, head := wallRepo(t)
	for opt, note := range map[string]string{
		"/nonexistent/ctags": "universal-ctags is not installed: only Go files have symbols",
		"off":                "ctags is turned off here: only Go files have symbols",
	} {
		ix := build(t, ws, head, Options{Ctags: opt})
		if ix.Note() != note {
			t.Errorf("Ctags %q: Note = %q, want %q", opt, ix.Note(), note)
		}
		if len(ix.Definitions("Client", false)) != 1 || len(ix.Definitions("Cart", false)) != 0 {
			t.Errorf("Ctags %q: Go symbols should be there, Python ones not", opt)
		}
	}
}

// TestBuildCtagsHangs: a ctags that never answers costs its batch's
// symbols and a note, not the build.
func TestBuildCtagsHangs(t *testing.T) {
	ws, head := wallRepo(t)
	fake := filepath.Join(t.TempDir(), "ctags")
	script := "#!/bin/sh\ncase \"$*\" in *--list-features*) printf 'json\\ninteractive\\n'; exit 0;; *--list-languages*) exit 0;; esac\nexec sleep 60\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ix := build(t, ws, head, Options{Ctags: fake, CtagsTimeout: time.Second})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Build took %v with a hanging ctags", d)
	}
	if want := "ctags failed on some files: their symbols are missing"; ix.Note() != want {
		t.Errorf("Note = %q, want %q", ix.Note(), want)
	}
	if len(ix.Definitions("Client", false)) != 1 || len(ix.Definitions("Cart", false)) != 0 {
		t.Error("Go symbols should be there, Python ones not")
	}
}

// TestConcurrentQueries: an index answers from many goroutines at once,
// including the parts it works out on first use.
func TestConcurrentQueries(t *testing.T) {
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ix.Candidates([]string{"Client"}, true)
			ix.Definitions("client.do", true)
			ix.References("Client")
			ix.Files()
			ix.WithWorkspace(ws).Files()
		})
	}
	wg.Wait()
}

// TestBuildCanceled: Build stops with the context's error.
func TestBuildCanceled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dir, _ := randomTree(t, rng, 2000)
	ws := workspace(t, dir, tools.WorkspaceOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Build(ctx, ws, "x", Options{Ctags: "off"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Build with a canceled context = %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Millisecond)
	defer cancel()
	if _, err := Build(ctx, ws, "x", Options{Ctags: "off", Workers: 1}); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Build past its deadline = %v, want context.DeadlineExceeded or a finished index", err)
	}
}
