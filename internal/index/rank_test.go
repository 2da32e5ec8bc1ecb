package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/askrepo/askrepo/internal/tools"
)

func TestFilesRanking(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a/a.go":          "package a\n\nfunc Foo() {}\n\nfunc helper() {}\n\nvar db = 1\n\ntype T struct{ Name string }\n",
		"a/use.go":        "package a\n\nfunc x() { helper(); helper(); Foo(); _ = db; _ = db }\n",
		"a/a_test.go":     "package a\n\nfunc fixture() {}\n\nfunc TestA() { fixture() }\n",
		"a/more_test.go":  "package a\n\nfunc TestB() { fixture(); fixture() }\n",
		"a/other.go":      "package a\n\nfunc y() { fixture() }\n",
		"b/b.go":          "package b\n\nimport \"a\"\n\nfunc z(t a.T) { a.Foo(); a.Foo(); helper(); _ = t.Name; _ = t.Name }\n",
		"b/Foo.py":        "Foo()\nFoo()\n",
		"a/testdata/x.go": "package x\n\nfunc Foo() {}\n\nfunc w() { Foo(); Foo(); Foo() }\n",
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix := build(t, workspace(t, dir, tools.WorkspaceOptions{}), "x", Options{Ctags: "off"})
	got := map[string]int{}
	for _, f := range ix.Files() {
		got[f.Path] = f.Refs
	}
	want := map[string]int{
		// Lines that use a name, not uses: Foo on one line of a/use.go
		// and one of b/b.go (not from Python, not from testdata); helper
		// on one line of its directory, not from b/; db is too short;
		// T.Name is a member.
		"a/a.go": 1 + 1 + 1,
		// fixture: from the other test file only.
		"a/a_test.go": 1,
	}
	for p := range files {
		if got[p] != want[p] {
			t.Errorf("Refs of %s = %d, want %d", p, got[p], want[p])
		}
	}
	if first := ix.Files()[0].Path; first != "a/a.go" {
		t.Errorf("first file %s, want a/a.go", first)
	}
}
