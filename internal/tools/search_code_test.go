package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/search"
)

// searchFixture is a real git checkout with the cases search must get
// right: ignored, secret, binary and huge files next to ordinary code.
func searchFixture(t *testing.T) string {
	t.Helper()
	return wsGitDir(t, map[string]string{
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n\terr := lib.NewParseError(\"x\")\n\t_ = err\n}\n",
		"lib/util.go": "package lib\n\n// ParseError reports a bad input.\ntype ParseError struct{}\n\n" +
			"func NewParseError(s string) error { return nil }\n",
		"lib/util_test.go": "package lib\n\nfunc TestParseError(t *testing.T) {}\n",
		"docs/notes.md":    "École and ecole\n\u212aelvin and kelvin\nstraße\n",
		"build/gen.go":     "var x = NewParseError(\"generated\")\n",
		"debug.log":        "NewParseError in a log\n",
		".env":             "TOKEN=NewParseError\n",
		"bin.dat":          "NewParseError\x00\x01\x02",
		"big/huge.txt":     "NewParseError\n" + strings.Repeat("x", DefaultSearchMaxFileSize),
		".gitignore":       "build/\n*.log\n",
	})
}

func runSearch(t *testing.T, s *SearchCode, args any) (string, error) {
	t.Helper()
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return runText(t.Context(), s, in)
}

func TestSearchCode(t *testing.T) {
	dir := searchFixture(t)
	s := NewSearchCode(wsNew(t, dir, WorkspaceOptions{}), Options{})
	type args = map[string]any
	tests := []struct {
		name string
		args args
		want string
	}{
		{
			name: "literal, with ignored, secret, binary and huge files left out",
			args: args{"pattern": "NewParseError(", "literal": true},
			want: "2 matches in 2 files\nSkipped 1 binary file and 1 file over 2 MB.\n\n" +
				"lib/util.go:6: func NewParseError(s string) error { return nil }\n" +
				"main.go:7: \terr := lib.NewParseError(\"x\")\n",
		},
		{
			name: "regex with an inner literal",
			args: args{"pattern": `\w+Error\(`},
			want: "3 matches in 3 files\nSkipped 1 binary file and 1 file over 2 MB.\n\n" +
				"lib/util.go:6: func NewParseError(s string) error { return nil }\n" +
				"lib/util_test.go:3: func TestParseError(t *testing.T) {}\n" +
				"main.go:7: \terr := lib.NewParseError(\"x\")\n",
		},
		{
			name: "regex without a literal",
			args: args{"pattern": `[A-Z][a-z]+[A-Z][a-z]+\(`, "path": "main.go"},
			want: "1 match in 1 file\n\n" +
				"main.go:7: \terr := lib.NewParseError(\"x\")\n",
		},
		{
			name: "ignore_case folds non-ASCII and the Kelvin sign",
			args: args{"pattern": "kelvin", "ignore_case": true, "path": "docs"},
			want: "1 match in 1 file\n\ndocs/notes.md:2: \u212aelvin and kelvin\n",
		},
		{
			name: "ignore_case on a non-ASCII literal",
			args: args{"pattern": "éCOLE", "ignore_case": true, "literal": true},
			want: "1 match in 1 file\nSkipped 1 binary file and 1 file over 2 MB.\n\ndocs/notes.md:1: École and ecole\n",
		},
		{
			name: "case matters by default",
			args: args{"pattern": "école", "path": "docs"},
			want: "No matches for pattern \"école\" in 1 file under docs.\n" +
				"Try ignore_case=true, a shorter or more distinctive part of the text, a broader path (or none).\n",
		},
		{
			name: "include by file name",
			args: args{"pattern": "ParseError", "include": "*_test.go"},
			want: "1 match in 1 file\n\nlib/util_test.go:3: func TestParseError(t *testing.T) {}\n",
		},
		{
			name: "include by path",
			args: args{"pattern": "ParseError", "include": "lib/**/*.go", "max_results": 2},
			want: "4 matches in 2 files (showing 2)\n\n" +
				"lib/util.go:3: // ParseError reports a bad input.\n" +
				"lib/util.go:4: type ParseError struct{}\n\n" +
				"Showing 2 of 4 matches (cut at max_results=2). Narrow the search with a more specific pattern, a path, or an include glob such as \"*.go\", or raise max_results (up to 500).\n",
		},
		{
			name: "path limits to a directory",
			args: args{"pattern": "package", "path": "lib/"},
			want: "2 matches in 2 files\n\nlib/util.go:1: package lib\nlib/util_test.go:1: package lib\n",
		},
		{
			name: "an ignored file named explicitly is searched",
			args: args{"pattern": "generated", "path": "build/gen.go"},
			want: "1 match in 1 file\n\nbuild/gen.go:1: var x = NewParseError(\"generated\")\n",
		},
		{
			name: "context lines and group separators",
			args: args{"pattern": "ParseError|Println", "context": 1, "path": "main.go"},
			want: "2 matches in 1 file\n\n" +
				"main.go-5- func main() {\n" +
				"main.go:6: \tfmt.Println(\"hello\")\n" +
				"main.go:7: \terr := lib.NewParseError(\"x\")\n" +
				"main.go-8- \t_ = err\n",
		},
		{
			name: "context across files",
			args: args{"pattern": "^package", "context": 1, "include": "*.go"},
			want: "3 matches in 3 files\n\n" +
				"lib/util.go:1: package lib\n" +
				"lib/util.go-2- \n" +
				"--\n" +
				"lib/util_test.go:1: package lib\n" +
				"lib/util_test.go-2- \n" +
				"--\n" +
				"main.go:1: package main\n" +
				"main.go-2- \n",
		},
		{
			name: "context is capped",
			args: args{"pattern": "type ParseError", "context": 9, "path": "lib/util.go"},
			want: "1 match in 1 file\nNote: context is capped at 5 lines.\n\n" +
				"lib/util.go-1- package lib\nlib/util.go-2- \nlib/util.go-3- // ParseError reports a bad input.\n" +
				"lib/util.go:4: type ParseError struct{}\nlib/util.go-5- \n" +
				"lib/util.go-6- func NewParseError(s string) error { return nil }\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runSearch(t, s, tt.args)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSearchCodeErrors(t *testing.T) {
	dir := searchFixture(t)
	s := NewSearchCode(wsNew(t, dir, WorkspaceOptions{}), Options{})
	tests := []struct {
		name  string
		input string
		is    error
		want  []string
	}{
		{name: "invalid JSON", input: `{"pattern": 3}`, want: []string{"arguments are not valid JSON or have the wrong type", `"pattern" must be string`}},
		{name: "empty input", input: ``, want: []string{`"pattern" is empty`}},
		{name: "lookahead", input: `{"pattern": "foo(?=bar)"}`, is: search.ErrSyntax, want: []string{"invalid or unsupported Perl syntax: `(?=`", "RE2 syntax", "lookahead", "literal=true"}},
		{name: "unbalanced paren", input: `{"pattern": "NewParseError("}`, is: search.ErrSyntax, want: []string{"missing closing )", "literal=true"}},
		{name: "outside", input: `{"pattern": "x", "path": "../etc"}`, is: ErrOutside, want: []string{"outside the workspace"}},
		{name: "absolute outside", input: `{"pattern": "x", "path": "/etc/passwd"}`, is: ErrOutside},
		{name: "denied file", input: `{"pattern": "TOKEN", "path": ".env"}`, is: ErrDenied, want: []string{"deny-list"}},
		{name: "missing path", input: `{"pattern": "x", "path": "nope"}`, want: []string{`"nope" does not exist`, "list_files"}},
		{name: "ignored directory", input: `{"pattern": "x", "path": "build/"}`, want: []string{"no searchable files", ".gitignore"}},
		{name: "bad include", input: `{"pattern": "x", "include": "[a"}`, want: []string{"not a valid glob"}},
		{name: "negative context", input: `{"pattern": "x", "context": -1}`, want: []string{`"context" must be between 0 and 5`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runText(t.Context(), s, json.RawMessage(tt.input))
			if err == nil {
				t.Fatalf("Run(%s) = %q, want an error", tt.input, out)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %q does not wrap %v", err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestSearchCodeSecretNeverSearched also covers a whole-repository search:
// the .env file is not even listed, so its content cannot leak.
func TestSearchCodeSecretNeverSearched(t *testing.T) {
	dir := searchFixture(t)
	s := NewSearchCode(wsNew(t, dir, WorkspaceOptions{}), Options{})
	for _, p := range []string{"TOKEN", "in a log"} {
		out, err := runSearch(t, s, map[string]any{"pattern": p})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "No matches") {
			t.Errorf("search for %q found a denied or ignored file:\n%s", p, out)
		}
	}
}

func TestSearchCodeLongLineCut(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("a", 3000) + "NEEDLE" + strings.Repeat("é", 2000)
	wsWriteFiles(t, dir, map[string]string{"min.js": line + "\n"})
	s := NewSearchCode(wsNew(t, dir, WorkspaceOptions{}), Options{})
	out, err := runSearch(t, s, map[string]any{"pattern": "NEEDLE"})
	if err != nil {
		t.Fatal(err)
	}
	_, shown, _ := strings.Cut(out, "min.js:1: ")
	shown = strings.TrimSuffix(shown, "\n")
	if !strings.Contains(shown, "NEEDLE") {
		t.Errorf("the cut line lost the match:\n%s", shown)
	}
	if !strings.HasPrefix(shown, "…a") || !strings.Contains(shown, "é… [line cut, 7006 bytes long]") {
		t.Errorf("the cut line has no markers on both ends:\n%s", shown)
	}
	if len(shown) > search.MaxLineLen+60 {
		t.Errorf("cut line is %d bytes, want about %d", len(shown), search.MaxLineLen)
	}
}

func TestSearchCodeMaxResultsAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("f%02d.txt", i)] = strings.Repeat("hit\n", 20)
	}
	wsWriteFiles(t, dir, files)
	s := NewSearchCode(wsNew(t, dir, WorkspaceOptions{}), Options{Search: SearchCodeOptions{Workers: 4}})
	out, err := runSearch(t, s, map[string]any{"pattern": "hit", "max_results": 30})
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(out, "\n")
	if head != "800 matches in 40 files (showing 30)" {
		t.Errorf("header = %q", head)
	}
	if n := strings.Count(out, ": hit\n"); n != 30 {
		t.Errorf("%d lines shown, want 30", n)
	}
	// Path order whatever the workers did: f00 fully, then f01 lines 1–10.
	if !strings.Contains(out, "f00.txt:20: hit\nf01.txt:1: hit\n") || !strings.HasSuffix(strings.TrimRight(strings.Split(out, "\n\nShowing")[0], "\n"), "f01.txt:10: hit") {
		t.Errorf("not the first 30 matches in path order:\n%s", out)
	}
	if !strings.Contains(out, "Showing 30 of 800 matches") || !strings.Contains(out, "Narrow the search") {
		t.Errorf("no truncation notice:\n%s", out)
	}
	if got := s.Summarize(out); got != "800 matches in 40 files (showing 30)" {
		t.Errorf("Summarize = %q", got)
	}
}

// TestSearchCodeTimeout steps the budget clock once per check, so the
// search runs out of time after a known number of files and must report
// what it found as partial.
func TestSearchCodeTimeout(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("f%d.txt", i)] = "needle\n"
	}
	wsWriteFiles(t, dir, files)
	s := NewSearchCode(wsNew(t, dir, WorkspaceOptions{}), Options{Search: SearchCodeOptions{Workers: 1, Timeout: 3 * time.Second}})
	var ticks atomic.Int64
	base := time.Unix(0, 0)
	s.now = func() time.Time { return base.Add(time.Duration(ticks.Add(1)-1) * time.Second) }
	out, err := runSearch(t, s, map[string]any{"pattern": "needle"})
	if err != nil {
		t.Fatal(err)
	}
	// Tick 0 starts the clock; checks at 1, 2, 3 s pass, 4 s is over.
	want := "3 matches in 3 files\n" +
		"Partial results: the search timed out after 3s having searched 3 of 10 files, so there may be more matches. Narrow it with path or include, or use a pattern with a plain-text part.\n\n" +
		"f0.txt:1: needle\nf1.txt:1: needle\nf2.txt:1: needle\n"
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output mismatch (-want +got):\n%s", diff)
	}
	if got := s.Summarize(out); got != "3 matches in 3 files, timed out" {
		t.Errorf("Summarize = %q", got)
	}
}

func TestSearchCodeCanceled(t *testing.T) {
	dir := searchFixture(t)
	s := NewSearchCode(wsNew(t, dir, WorkspaceOptions{}), Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if out, err := runText(ctx, s, json.RawMessage(`{"pattern": "x"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("Run on a canceled context = %q, %v; want context.Canceled", out, err)
	}
}

func TestSearchCodeSummarize(t *testing.T) {
	s := NewSearchCode(nil, Options{})
	tests := map[string]string{
		"12 matches in 3 files\n\na.go:1: x\n":              "12 matches in 3 files",
		"No matches for pattern \"x\" in 3 files.\nTry …\n": "no matches",
	}
	for out, want := range tests {
		if got := s.Summarize(out); got != want {
			t.Errorf("Summarize(%q) = %q, want %q", out, got, want)
		}
	}
}

func TestSearchCodeDefinition(t *testing.T) {
	d := NewSearchCode(nil, Options{}).Definition()
	if d.Name != "search_code" || !strings.Contains(d.Description, "read_file offset=") {
		t.Errorf("definition %q does not say how to combine with read_file: %q", d.Name, d.Description)
	}
	var schema map[string]any
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatalf("parameters are not valid JSON: %v", err)
	}
}

// TestSearchCodeSymlinks covers the fast reader's hand-over to
// Workspace.Open: a link to a secret is never read, a link to a directory
// is not entered, a link to a file inside is searched under its own name.
func TestSearchCodeSymlinks(t *testing.T) {
	dir := searchFixture(t)
	wsSymlink(t, ".env", dir+"/notes.txt")
	wsSymlink(t, "lib", dir+"/alias")
	wsSymlink(t, "main.go", dir+"/link.go")
	s := NewSearchCode(wsNew(t, dir, WorkspaceOptions{}), Options{})
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "TOKEN"}, "No matches"},
		{map[string]any{"pattern": "^package lib", "include": "*.go"}, "2 matches in 2 files\n\nlib/util.go:1: package lib\nlib/util_test.go:1: package lib\n"},
		{map[string]any{"pattern": "package main"}, "2 matches in 2 files\nSkipped 1 binary file and 1 file over 2 MB.\n\nlink.go:1: package main\nmain.go:1: package main\n"},
	}
	for _, tt := range tests {
		out, err := runSearch(t, s, tt.args)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, tt.want) {
			t.Errorf("search %v:\n%s\nwant it to start with:\n%s", tt.args, out, tt.want)
		}
	}
}

// TestSearchCodeSymlinkedParents covers a directory swapped for a symlink
// after the file list was made: the fast reader opens a directory in one
// call, which follows a symlink in the path, so it must notice and hand over
// to Workspace.Open, which refuses a link leading out and reads one inside
// under the listed name.
func TestSearchCodeSymlinkedParents(t *testing.T) {
	for _, tt := range []struct {
		name, target, want string
	}{
		{"out", "../outside", "No matches"},
		{"in", "other", "1 match in 1 file\n\nlib/sub/x.go:1: other needle\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := parent + "/repo"
			wsWriteFiles(t, parent, map[string]string{
				"outside/sub/x.go":    "SECRET needle\n",
				"repo/lib/sub/x.go":   "package sub\n",
				"repo/other/sub/x.go": "other needle\n",
			})
			t.Setenv("GIT_CEILING_DIRECTORIES", parent)
			ws := wsNew(t, dir, WorkspaceOptions{FilesTTL: time.Hour})
			if _, err := ws.Files(t.Context()); err != nil { // listed while lib is a directory
				t.Fatal(err)
			}
			if err := os.Rename(dir+"/lib", dir+"/lib.old"); err != nil {
				t.Fatal(err)
			}
			wsSymlink(t, tt.target, dir+"/lib")
			out, err := runSearch(t, NewSearchCode(ws, Options{}), map[string]any{"pattern": "needle", "path": "lib"})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out, "SECRET") {
				t.Fatalf("search read outside the checkout:\n%s", out)
			}
			if !strings.HasPrefix(out, tt.want) {
				t.Errorf("search:\n%s\nwant it to start with:\n%s", out, tt.want)
			}
		})
	}
}
