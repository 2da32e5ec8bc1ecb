package symbols

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func realCtags(t *testing.T) *Ctags {
	t.Helper()
	c, err := NewCtags(t.Context(), "", 10*time.Second)
	if errors.Is(err, ErrNoCtags) {
		t.Skipf("no universal-ctags here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCtagsTags(t *testing.T) {
	c := realCtags(t)
	huge := bytes.Repeat([]byte("# padding\n"), 300_000) // 3 MB
	huge = append(huge, "\ndef last_one():\n    pass\n"...)
	files := []Source{
		{"shop/cart.py", []byte("# A cart.\nclass Cart:\n    # Add one item.\n    def add(self, item):\n        return item\n\n    def _secret(self):\n        pass\n")},
		// Names that look like options are labels, never arguments.
		{"-x.py", []byte("def dash():\n    pass\n")},
		{"--help.js", []byte("function help(a) {}\nfunction abc() {}\n")},
		{"--options=/etc/passwd.rb", []byte("class Opt\nend\n")},
		{"bin.dat", []byte("\x00\x01\x02\xff\xfe def not_this():\n")},
		{"empty.c", nil},
		{"tests/test_cart.py", []byte("def test_add():\n    pass\n")},
		// Data and prose: no symbols.
		{"package.json", []byte("{\"name\": \"shop\", \"version\": 1}\n")},
		{"README.md", []byte("# Shop\n\n## Install\n")},
		{"ci.yaml", []byte("jobs:\n  build: {}\n")},
		{"big.py", huge},
	}
	got, err := c.Tags(t.Context(), files)
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Name, Kind, Container, Signature, Doc, Lang string
		Line, EndLine                               int
		Exported, Test                              bool
	}
	var flat []short
	for i, f := range got {
		for _, s := range f.Symbols {
			if s.Path != files[i].Path {
				t.Errorf("%s: path %q, want %q", s.Name, s.Path, files[i].Path)
			}
			flat = append(flat, short{s.Name, s.Kind, s.Container, s.Signature, s.Doc, s.Lang, s.Line, s.EndLine, s.Exported, s.Test})
		}
	}
	want := []short{
		{"Cart", "class", "", "class Cart:", "A cart.", "python", 2, 8, true, false},
		{"add", "member", "Cart", "def add(self, item):", "Add one item.", "python", 4, 5, true, false},
		{"_secret", "member", "Cart", "def _secret(self):", "", "python", 7, 8, false, false},
		{"dash", "function", "", "def dash():", "", "python", 1, 2, true, false},
		{"help", "function", "", "function help(a) {}", "", "javascript", 1, 1, true, false},
		{"abc", "function", "", "function abc() {}", "", "javascript", 2, 2, true, false},
		{"Opt", "class", "", "class Opt", "", "ruby", 1, 2, true, false},
		{"test_add", "function", "", "def test_add():", "", "python", 1, 2, true, true},
		{"last_one", "function", "", "def last_one():", "", "python", 300002, 300003, true, false},
	}
	if diff := cmp.Diff(want, flat); diff != "" {
		t.Errorf("symbols (-want +got):\n%s", diff)
	}
}

// fakeCtags puts a script named ctags in a new directory: it answers
// --list-features as universal-ctags does, then runs body.
func fakeCtags(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\ncase \"$*\" in *--list-features*) printf 'json\\ninteractive\\n'; exit 0;; *--list-languages*) printf 'Python\\nJSON\\n'; exit 0;; esac\n" + body + "\n"
	path := filepath.Join(dir, "ctags")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCtagsHostile(t *testing.T) {
	src := []Source{{"a.py", []byte("def a():\n    pass\n")}}
	for _, tc := range []struct {
		name, body string
		want       string
		timeout    time.Duration
	}{
		{"hangs", "exec sleep 60", "deadline exceeded", time.Second},
		// The flood proves the output cap, not the timeout: it gets time
		// enough to reach the cap on a loaded machine.
		{"floods", "exec yes '{\"_type\": \"tag\", \"name\": \"x\", \"path\": \"a.py\", \"line\": 1}'", "output exceeds", 8 * time.Second},
		{"garbage", "echo 'not json'", "unexpected output", time.Second},
		{"dies", "exit 3", "output ended", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCtags(t.Context(), fakeCtags(t, tc.body), tc.timeout)
			if err != nil {
				t.Fatal(err)
			}
			c.MaxOutput = 64 << 10
			start := time.Now()
			got, err := c.Tags(t.Context(), src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one saying %q", err, tc.want)
			}
			if len(got) != 1 || len(got[0].Symbols) != 0 {
				t.Errorf("a failed batch gave symbols: %+v", got)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v: the timeout did not stop it", d)
			}
		})
	}
}

func TestNewCtagsMissing(t *testing.T) {
	for name, path := range map[string]string{
		"not on PATH":  "askrepo-no-such-ctags",
		"exuberant":    fakeCtagsPlain(t, "#!/bin/sh\necho 'ctags: unknown option'; exit 1\n"),
		"no json":      fakeCtagsPlain(t, "#!/bin/sh\nprintf 'interactive\\n'\n"),
		"no languages": fakeCtagsPlain(t, "#!/bin/sh\ncase \"$*\" in *--list-features*) printf 'json\\ninteractive\\n'; exit 0;; esac\nexit 1\n"),
		"hangs":        fakeCtagsPlain(t, "#!/bin/sh\nexec sleep 60\n"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewCtags(t.Context(), path, time.Second)
			if !errors.Is(err, ErrNoCtags) {
				t.Errorf("err = %v, want ErrNoCtags", err)
			}
		})
	}
}

func fakeCtagsPlain(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ctags")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCtagsMemoryCap: with prlimit there, a ctags that needs more memory
// than its cap fails its batch instead of growing.
func TestCtagsMemoryCap(t *testing.T) {
	c := realCtags(t)
	if c.prlimit == "" {
		t.Skip("no prlimit here")
	}
	c.MaxMemory = 4 << 20 // too little to even load ctags
	got, err := c.Tags(t.Context(), []Source{{"a.py", []byte("def a():\n    pass\n")}})
	if err == nil || len(got[0].Symbols) != 0 {
		t.Errorf("Tags under a 4 MiB cap = %+v, %v; want an error", got, err)
	}
}

// TestCtagsHangsOnPATH: the ctags found on PATH (the default) is held to
// the same timeout.
func TestCtagsHangsOnPATH(t *testing.T) {
	fake := fakeCtags(t, "exec sleep 60")
	t.Setenv("PATH", filepath.Dir(fake)+string(os.PathListSeparator)+os.Getenv("PATH"))
	c, err := NewCtags(t.Context(), "", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if c.path != fake {
		t.Fatalf("found %s, want the fake %s", c.path, fake)
	}
	start := time.Now()
	if _, err := c.Tags(t.Context(), []Source{{"a.py", []byte("x = 1\n")}}); err == nil {
		t.Error("a hanging ctags gave no error")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v: the timeout did not stop it", d)
	}
}

func TestOffLanguages(t *testing.T) {
	got := offLanguages("Ada\nJSON\nMarkdown\nOldC [disabled]\nPython\n")
	if want := "--languages=-JSON,Markdown"; got != want {
		t.Errorf("offLanguages = %q, want %q", got, want)
	}
	if got := offLanguages("Python\n"); got != "" {
		t.Errorf("offLanguages with none to turn off = %q, want \"\"", got)
	}
}
