package index

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/google/go-cmp/cmp"
)

// texts returns what Text gives for every path, and false for those it
// holds none of.
func texts(ix *Index, paths []string) map[string]string {
	out := map[string]string{}
	for _, p := range paths {
		if b, ok := ix.Text(p); ok {
			out[p] = string(b)
		}
	}
	return out
}

// The index holds the text of exactly the files it indexed, as they are
// in the checkout, and nothing the wall keeps out: built, saved and
// loaded, and updated to the next commit.
func TestTextIsWhatTheWallRead(t *testing.T) {
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	asked := append([]string{"shop/client.go", "cmd/main.go", "py/cart.py", "--help.js", "-x.py", "data.bin", "big.txt", "absent.go"}, secretPaths...)
	want := map[string]string{}
	for _, p := range []string{"shop/client.go", "cmd/main.go", "py/cart.py", "--help.js", "-x.py"} {
		b, err := os.ReadFile(filepath.Join(ws.Dir(), p))
		if err != nil {
			t.Fatal(err)
		}
		want[p] = string(b)
	}
	// data.bin is binary and big.txt over the size limit: listed, no text.
	if diff := cmp.Diff(want, texts(ix, asked)); diff != "" {
		t.Errorf("built (-want +got):\n%s", diff)
	}

	got := saveAndLoad(t, ix)
	if diff := cmp.Diff(want, texts(got, asked)); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}
	if err := got.Verify(); err != nil {
		t.Errorf("Verify = %v", err)
	}

	// The next commit changes one file, adds one, removes one and turns
	// one into a secret's copy: the updated index's text follows.
	r := gitexectest.Open(t, ws.Dir())
	next := r.Commit(gitexectest.Commit{
		Write:  map[string]string{"shop/client.go": clientGo + "\nfunc Added() {}\n", "new.go": "package x\n", "py/cart.py": envSecret},
		Remove: []string{"cmd/main.go"},
	})
	ws2, err := tools.NewWorkspace(ws.Dir(), tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	up, err := Update(t.Context(), got, ws2, next, []string{"shop/client.go", "new.go", "py/cart.py", "cmd/main.go"}, Options{MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	want["shop/client.go"] += "\nfunc Added() {}\n"
	want["new.go"] = "package x\n"
	delete(want, "cmd/main.go")
	delete(want, "py/cart.py") // now a secret blob's copy
	if diff := cmp.Diff(want, texts(up, append(asked, "new.go"))); diff != "" {
		t.Errorf("updated (-want +got):\n%s", diff)
	}
}

// A byte flipped in one file's saved text makes that file's text
// unavailable (the caller reads the checkout), leaves the other files'
// text served, and fails Verify; the symbols whose places point into it
// are reported damaged rather than decoded wrong.
func TestDamagedTextIsNotServed(t *testing.T) {
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	data := encoded(t, ix)
	from, _ := sectionAt(t, data, secText)
	// Files are in path order: "--help.js" is the first with text.
	target := "shop/client.go"
	id := -1
	var off int64
	for i, f := range ix.files {
		if f.path == target {
			id = i
			break
		}
		if f.size > 0 {
			off += f.size
		}
	}
	if id < 0 {
		t.Fatal("no shop/client.go in the index")
	}
	data[from+int(off)+3] ^= 0x20
	path := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatalf("Load = %v; a damaged text is found when read, not at Load", err)
	}
	if _, ok := got.Text(target); ok {
		t.Errorf("Text(%s) served damaged text", target)
	}
	if b, ok := got.Text("cmd/main.go"); !ok || string(b) != mainGo {
		t.Errorf("Text(cmd/main.go) = %q, %v; want its text", b, ok)
	}
	if err := got.Verify(); !errors.Is(err, ErrFormat) {
		t.Errorf("Verify = %v, want ErrFormat", err)
	}
	if d := got.Definitions("Client", false); len(d) != 0 {
		t.Errorf("Definitions(Client) = %v from a damaged file", d)
	}
	if !strings.Contains(got.Note(), "damaged") {
		t.Errorf("Note() = %q, want it to say the index is damaged", got.Note())
	}
}

// A text section that does not add up to the files' sizes is refused at
// Load, never read past.
func TestLoadRefusesTextOfAnotherSize(t *testing.T) {
	ws, head := wallRepo(t)
	data := encoded(t, build(t, ws, head, Options{}))
	ent := data[tocAt+secText*tocEntry:]
	binary.LittleEndian.PutUint64(ent[8:], binary.LittleEndian.Uint64(ent[8:])-1)
	binary.LittleEndian.PutUint32(data[headerLen-4:], crc32.ChecksumIEEE(data[:headerLen-4]))
	path := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrFormat) {
		t.Errorf("Load = %v, want ErrFormat", err)
	}
}

// A build writes the text to a file it unlinks at once: nothing is left in
// its directory, whether the build ends or is canceled.
func TestBuildLeavesNoTextFileBehind(t *testing.T) {
	ws, head := wallRepo(t)
	dir := t.TempDir()
	ix := build(t, ws, head, Options{TempDir: dir})
	if b, ok := ix.Text("cmd/main.go"); !ok || string(b) != mainGo {
		t.Errorf("Text(cmd/main.go) = %q, %v", b, ok)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Build(ctx, ws, head, Options{TempDir: dir}); err == nil {
		t.Error("a canceled build succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// Signatures and doc lines are saved as places in their file's text when
// they are found there, and as they are when not: both come back the same.
func TestSymbolPlacesRoundTrip(t *testing.T) {
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	doIdx := -1
	for i, s := range ix.syms {
		if s.Name == "Do" {
			doIdx = i
		}
	}
	if doIdx < 0 {
		t.Fatal("no Do symbol")
	}
	if s := ix.syms[doIdx]; s.Signature != "func (c *Client) Do(req string) error" || s.Doc != "Do sends req." {
		t.Fatalf("Do = %q / %q: the fixture changed", s.Signature, s.Doc)
	}
	ix.syms[doIdx].Doc = "not in the file at all"
	ix.syms[0].Signature = "" // empty stays empty
	got := saveAndLoad(t, ix)
	if diff := cmp.Diff(ix.syms, got.whole().syms); diff != "" {
		t.Errorf("symbols (-saved +loaded):\n%s", diff)
	}
}

// A saved index is the wall's reading under the deny-list it was built
// with. Here notes.txt links to an ignored file, read through the link
// when the index was built; the deny-list then grows to cover the
// target, and the index saved before is loaded for the same commit. A
// search must not show the target's text through the index, as reading
// the link refuses it now.
func TestLoadedIndexDoesNotOutliveItsDenyList(t *testing.T) {
	const key = "private-key-7731\n"
	r := gitexectest.Init(t, "")
	head := r.Commit(gitexectest.Commit{Write: map[string]string{".gitignore": "private/\n", "a.go": "package a\n"}})
	if err := os.MkdirAll(filepath.Join(r.Dir, "private"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Dir, "private", "key.txt"), []byte(key), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("private/key.txt", filepath.Join(r.Dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ix := build(t, ws, head, Options{})
	if b, ok := ix.Text("notes.txt"); !ok || string(b) != key {
		t.Fatalf("Text(notes.txt) = %q, %v; the test needs the link's text indexed", b, ok)
	}
	path := filepath.Join(t.TempDir(), "index")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}

	denied, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{Deny: []string{"private/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer denied.Close()
	loaded, err := Indexer{}.Load(t.Context(), path, denied)
	if err != nil {
		return // refused: it is built again under the new deny-list
	}
	search := tools.NewSearchCode(denied, tools.Options{Index: func() (tools.CodeIndex, string) { return loaded, "" }})
	out, err := search.Run(t.Context(), []byte(`{"pattern":"private-key-7731","literal":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Text, "7731") {
		t.Errorf("a denied file's text came out of an index saved under the old deny-list:\n%s", out.Text)
	}
}

// A symlink's text is its target's: when a commit changes the target,
// git lists the target as changed, not the link, and the updated index
// must not keep the link's text from the earlier commit.
func TestUpdateReadsALinkWhoseTargetChanged(t *testing.T) {
	r := gitexectest.Init(t, "")
	r.Commit(gitexectest.Commit{Write: map[string]string{"a.txt": "alpha-old-5150\n"}})
	if err := os.Symlink("a.txt", filepath.Join(r.Dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	r.Git("add", "notes.txt")
	first := r.Commit(gitexectest.Commit{})
	ws, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	prev := build(t, ws, first, Options{})
	if b, _ := prev.Text("notes.txt"); string(b) != "alpha-old-5150\n" {
		t.Fatalf("Text(notes.txt) = %q before the change", b)
	}
	next := r.Commit(gitexectest.Commit{Write: map[string]string{"a.txt": "alpha-new-5150\n"}})
	ws2, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	up, err := Update(t.Context(), prev, ws2, next, []string{"a.txt"}, Options{MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.txt", "notes.txt"} {
		if b, ok := up.Text(p); ok && string(b) != "alpha-new-5150\n" {
			t.Errorf("Text(%s) = %q after the update; want the commit's text", p, b)
		}
	}
	if got, _ := up.Candidates([]string{"alpha-new"}, false); !slices.Contains(got, "notes.txt") {
		t.Errorf("Candidates(alpha-new) = %v; want notes.txt among them", got)
	}
}

// File sizes whose sum wraps around to the text's length (every checksum
// right) are refused at Load, never sliced with.
func TestLoadRefusesTextSizesThatWrap(t *testing.T) {
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	var withText []int
	for id, f := range ix.files {
		if f.size >= 0 {
			withText = append(withText, id)
		}
	}
	if len(withText) < 4 {
		t.Fatalf("%d files with text; the test needs 4", len(withText))
	}
	// Four sizes of 2^62 add up to 2^64, nothing in 64 bits; the last
	// also takes what the others had, so the sum is the text's length.
	var moved int64
	for _, id := range withText[:4] {
		moved += ix.files[id].size
		ix.files[id].size = 1 << 62
	}
	ix.files[withText[3]].size += moved
	data := encoded(t, ix)
	got, err := loadBytes(t, data)
	if err == nil {
		for _, f := range got.files {
			got.Text(f.path)
		}
		t.Fatal("Load accepted file sizes that wrap around")
	}
	if !errors.Is(err, ErrFormat) {
		t.Errorf("Load = %v, want ErrFormat", err)
	}
}

// An index holds the text of one checkout's files: the same commit read
// from another directory of the repository (the service pointed at
// another part of it under the same name) has other files under the
// same paths. Neither a saved index nor the base of an update may answer
// for the other directory with the first one's text.
func TestIndexOfOneDirectoryDoesNotServeAnother(t *testing.T) {
	r := gitexectest.Init(t, "")
	head := r.Commit(gitexectest.Commit{Write: map[string]string{
		"one/a.txt": "only-in-one-6061\n",
		"two/a.txt": "only-in-two-6062\n",
	}})
	wsAt := func(sub string) *tools.Workspace {
		ws, err := tools.NewWorkspace(filepath.Join(r.Dir, sub), tools.WorkspaceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		return ws
	}
	one, two := wsAt("one"), wsAt("two")
	ix := build(t, one, head, Options{})
	if b, ok := ix.Text("a.txt"); !ok || string(b) != "only-in-one-6061\n" {
		t.Fatalf("Text(a.txt) = %q, %v", b, ok)
	}
	path := filepath.Join(t.TempDir(), "index")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}
	if loaded, err := (Indexer{}).Load(t.Context(), path, two); err == nil {
		if b, ok := loaded.(*Index).Text("a.txt"); ok && string(b) != "only-in-two-6062\n" {
			t.Errorf("loaded for two/: Text(a.txt) = %q", b)
		}
	}
	next := r.Commit(gitexectest.Commit{Write: map[string]string{"b.txt": "top\n"}})
	up, err := Update(t.Context(), ix, two, next, []string{"b.txt"}, Options{MaxFileBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := up.Text("a.txt"); ok && string(b) != "only-in-two-6062\n" {
		t.Errorf("updated for two/: Text(a.txt) = %q", b)
	}
}

// The text handed out ends where the file does: appending to it copies,
// never writing into the next file's text.
func TestTextIsCappedAtItsFile(t *testing.T) {
	ws, head := wallRepo(t)
	for _, ix := range []*Index{build(t, ws, head, Options{}), saveAndLoad(t, build(t, ws, head, Options{}))} {
		b, ok := ix.Text("cmd/main.go")
		if !ok {
			t.Fatal("no text of cmd/main.go")
		}
		if cap(b) != len(b) {
			t.Errorf("cap %d, len %d: the text runs on into the next file's", cap(b), len(b))
		}
	}
}
