package tools_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/tools"
)

// searchTree is a committed checkout of real files: some packages of Go's
// own source, next to the files search_code must treat alike with and
// without an index: binary, huge, denied, ignored, non-ASCII and invalid
// UTF-8 files holding the same words.
func searchTree(t testing.TB, dirs ...string) (dir, commit string) {
	t.Helper()
	src := filepath.Join(runtime.GOROOT(), "src")
	files := map[string]string{
		"odd/bin.dat":     "func Decode\x00\x01 Error( binary",
		"odd/huge.txt":    "func Decode Error(\n" + strings.Repeat("x", tools.DefaultSearchMaxFileSize),
		"odd/kelvin.txt":  "\u212aelvin and kelvin and KELVIN\nstraße STRASSE\n",
		"odd/invalid.txt": "Decode\xff\xfeError( half \xc3\n",
		"odd/empty.txt":   "",
		".env":            "TOKEN=func Decode Error(\n",
		"build/out.go":    "func Decode() Error(\n",
		".gitignore":      "build/\n",
	}
	for _, d := range dirs {
		root := filepath.Join(src, filepath.FromSlash(d))
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			files[filepath.ToSlash(rel)] = string(b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	r := gitexectest.Init(t, "")
	commit = strings.TrimSpace(r.Commit(gitexectest.Commit{Write: files}))
	return r.Dir, commit
}

// searchPatterns is every kind of pattern search_code is given: literals
// (words of the tree itself, of every length), regular expressions with a
// required literal, the same case-insensitively, patterns with no literal
// at all, and non-ASCII ones; with path, include, context and max_results.
func searchPatterns(t testing.TB, dir string) []map[string]any {
	t.Helper()
	var ps []map[string]any
	add := func(args map[string]any) { ps = append(ps, args) }
	regexes := []string{
		`\w+Error\(`, `func \(\w+ \*\w+\) Decode`, `errors\.New\("`, `^package \w+_test$`, `Decode[A-Z]\w*`,
		`json:"`, `TODO\(`, `\bnil\b`, `[A-Z][a-z]+[A-Z][a-z]+\(`, `[0-9]+\.[0-9]+`, `\d{4}`, `[xyz]{3}`,
		`^\s*//`, `(Marshal|Unmarshal)JSON`, `(?i)kelvin`, `straße`, `(?i)STRASSE`, `Decode.*Error\(`,
		`\x{FFFD}`, `half`, `^$`, `.`, `Token(Type)?`, `ctx context\.Context`, `a.b`, `int64\)`, `return nil, err`,
	}
	for _, re := range regexes {
		add(map[string]any{"pattern": re})
		add(map[string]any{"pattern": re, "ignore_case": true})
	}
	for _, w := range sampleWords(t, dir, 40) {
		add(map[string]any{"pattern": w, "literal": true})
		add(map[string]any{"pattern": w, "literal": true, "ignore_case": true})
		add(map[string]any{"pattern": `\b` + regexp.QuoteMeta(w) + `\(`})
	}
	for _, lit := range []string{"func Decode", "Error(", "kelvin", "x", "ab", "the", "zzzzqqqq"} {
		add(map[string]any{"pattern": lit, "literal": true})
	}
	add(map[string]any{"pattern": "Decode", "path": "encoding/json"})
	add(map[string]any{"pattern": "Decode", "include": "*_test.go", "max_results": 5})
	add(map[string]any{"pattern": "Decode", "context": 2, "max_results": 7})
	add(map[string]any{"pattern": "func", "max_results": 500})
	add(map[string]any{"pattern": "Decode", "path": "odd"})
	add(map[string]any{"pattern": "Decode", "path": "build/out.go"})
	return ps
}

// sampleWords picks n identifiers of the tree's Go files, spread over it,
// deterministically.
func sampleWords(t testing.TB, dir string, n int) []string {
	t.Helper()
	ident := regexp.MustCompile(`\b[A-Za-z_][A-Za-z0-9_]{2,}\b`)
	var words []string
	i := 0
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		i++
		if i%13 != 0 {
			return nil
		}
		b, _ := os.ReadFile(p)
		all := ident.FindAll(b, -1)
		if len(all) > 0 {
			w := string(all[(i*7)%len(all)])
			if !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
		return nil
	})
	return words[:min(n, len(words))]
}

// searchBoth runs one search_code call without and with the index and
// fails when the two differ in anything the model or a person sees.
func searchBoth(t testing.TB, plain, indexed tools.Tool, args map[string]any) {
	t.Helper()
	in, _ := json.Marshal(args)
	want, werr := plain.Run(t.Context(), in)
	got, gerr := indexed.Run(t.Context(), in)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) {
		t.Errorf("%s: error %v through the index, %v without", in, gerr, werr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: through the index the result differs (-scan +index):\n%s", in, diff)
	}
}

func newSearches(t testing.TB, dir string, idx tools.CodeIndex) (plain, indexed tools.Tool) {
	t.Helper()
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	plain = tools.NewSearchCode(ws, tools.Options{})
	indexed = tools.NewSearchCode(ws, tools.Options{Index: func() (tools.CodeIndex, string) { return idx, "" }})
	return plain, indexed
}

// Through the index search_code reads fewer files and returns exactly
// what the scan returns, for every kind of pattern.
func TestSearchCodeThroughIndexReturnsTheScan(t *testing.T) {
	dir, commit := searchTree(t, "go", "encoding", "regexp", "strings")
	idx := buildIndex(t, dir, commit)
	plain, indexed := newSearches(t, dir, idx)
	patterns := searchPatterns(t, dir)
	if len(patterns) < 150 {
		t.Fatalf("only %d patterns", len(patterns))
	}
	for _, args := range patterns {
		searchBoth(t, plain, indexed, args)
	}
	t.Logf("%d patterns over %d files", len(patterns), len(idx.Files()))
}

func FuzzSearchCodeThroughIndex(f *testing.F) {
	for _, seed := range []struct {
		pattern         string
		literal, ignore bool
	}{
		{"Decode", false, false}, {`\w+Error\(`, false, false}, {"kelvin", false, true}, {"straße", true, false},
		{`[a-z]+`, false, false}, {"(?i)dec", false, false}, {`\bnil\b`, false, true}, {"a.b", true, true},
		{"\xff", true, false}, {`(`, false, false}, {"", false, false},
	} {
		f.Add(seed.pattern, seed.literal, seed.ignore)
	}
	dir, commit := searchTree(f, "encoding/json", "strings")
	idx := buildIndex(f, dir, commit)
	plain, indexed := newSearches(f, dir, idx)
	f.Fuzz(func(t *testing.T, pattern string, literal, ignore bool) {
		if len(pattern) > 64 {
			return
		}
		searchBoth(t, plain, indexed, map[string]any{"pattern": pattern, "literal": literal, "ignore_case": ignore, "max_results": 50})
	})
}

// onlyNamed is an index that rules out every file but one, to show that
// search_code reads what the index picks.
type onlyNamed struct {
	tools.CodeIndex
	file string
}

func (o onlyNamed) Candidates([]string, bool) ([]string, bool) { return []string{o.file}, true }

// search_code takes the index's word for which files may match, when the
// pattern has a literal, and only then.
func TestSearchCodeReadsWhatTheIndexPicks(t *testing.T) {
	dir, commit := searchTree(t, "strings")
	_, indexed := newSearches(t, dir, onlyNamed{CodeIndex: buildIndex(t, dir, commit), file: "strings/reader.go"})
	for _, tc := range []struct {
		args     map[string]any
		narrowed bool
	}{
		{map[string]any{"pattern": "func", "literal": true}, true},
		{map[string]any{"pattern": `\w+Reader\(`}, true},
		{map[string]any{"pattern": `[A-Z][a-z]+`}, false}, // no literal: every file is read
	} {
		in, _ := json.Marshal(tc.args)
		out, err := indexed.Run(t.Context(), in)
		first, _, _ := strings.Cut(out.Text, "\n")
		if err != nil || strings.Contains(first, " in 1 file") != tc.narrowed {
			t.Errorf("%s: %q, %v; want the matches of one file: %v", in, first, err, tc.narrowed)
		}
	}
}

// buildIndex is the real code index of the checkout in dir at commit.
func buildIndex(t testing.TB, dir, commit string) *index.Index {
	t.Helper()
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	idx, err := index.Build(t.Context(), ws, commit, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// The set of files an index holds is kept per commit: a search through the
// index of the next commit (here one more file) rules out by that index.
func TestSearchCodeThroughTheNextCommitsIndex(t *testing.T) {
	r := gitexectest.Init(t, "")
	first := strings.TrimSpace(r.Commit(gitexectest.Commit{Write: map[string]string{"a.go": "package a // Needle\n"}}))
	old := buildIndex(t, r.Dir, first)
	second := strings.TrimSpace(r.Commit(gitexectest.Commit{Write: map[string]string{"b.go": "package b // Needle\n"}}))
	next := buildIndex(t, r.Dir, second)
	ws, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	current := tools.CodeIndex(old)
	s := tools.NewSearchCode(ws, tools.Options{Index: func() (tools.CodeIndex, string) { return current, "" }})
	search := func() string {
		out, err := s.Run(t.Context(), json.RawMessage(`{"pattern":"Needle","literal":true}`))
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(out.Text, "\n")
		return first
	}
	// The old index does not hold b.go, so b.go is read as any file it
	// does not know.
	if got := search(); got != "2 matches in 2 files" {
		t.Errorf("through the old index: %q", got)
	}
	current = onlyNamed{CodeIndex: next, file: "a.go"}
	if got := search(); got != "1 match in 1 file" {
		t.Errorf("through the next commit's index, which picks a.go alone: %q", got)
	}
}

// A search that skips smaller files than the index holds reads every file,
// so what it says of the files it skips as too large is the scan's.
func TestSearchCodeWithALowerSizeLimitScans(t *testing.T) {
	dir, commit := searchTree(t, "strings")
	idx := onlyNamed{CodeIndex: buildIndex(t, dir, commit), file: "strings/reader.go"}
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	small := tools.SearchCodeOptions{MaxFileSize: 4 << 10}
	plain := tools.NewSearchCode(ws, tools.Options{Search: small})
	indexed := tools.NewSearchCode(ws, tools.Options{Search: small, Index: func() (tools.CodeIndex, string) { return idx, "" }})
	searchBoth(t, plain, indexed, map[string]any{"pattern": "func", "literal": true})
}

// A file the index found binary is counted as skipped, as the scan counts
// it, without being read again: here it has since been replaced on disk
// by text holding the pattern, which the scan finds and the search
// through the index does not read.
func TestSearchCodeTakesTheIndexsWordOnBinaryFiles(t *testing.T) {
	dir, commit := searchTree(t, "strings")
	idx := buildIndex(t, dir, commit)
	if binary, _, _ := idx.Unindexed(); !slices.Contains(binary, "odd/bin.dat") {
		t.Fatalf("the index does not list odd/bin.dat as binary: %q", binary)
	}
	plain, indexed := newSearches(t, dir, idx)
	if err := os.WriteFile(filepath.Join(dir, "odd/bin.dat"), []byte("Builder now text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"pattern":"Builder","literal":true,"path":"odd"}`)
	want, err := plain.Run(t.Context(), in)
	if err != nil || !strings.HasPrefix(want.Text, "1 match in 1 file") {
		t.Fatalf("the scan: %q, %v", want.Text, err)
	}
	got, err := indexed.Run(t.Context(), in)
	if err != nil || !strings.Contains(got.Text, "Skipped 1 binary file") || strings.Contains(got.Text, "odd/bin.dat:") {
		t.Errorf("through the index: %q, %v; want odd/bin.dat skipped as binary, unread", got.Text, err)
	}
}

// Through an index that holds the files' text, search_code reads that
// text rather than the checkout: here a file changed on disk after the
// index was built (to text of the same length) is still searched as the
// index read it, while the scan sees the change. With a lower size limit
// than the index's, the index's text is skipped as too large exactly as
// the scan skips the file.
func TestSearchCodeReadsTheIndexsText(t *testing.T) {
	dir, commit := searchTree(t, "strings")
	idx := buildIndex(t, dir, commit)
	plain, indexed := newSearches(t, dir, idx)
	path := filepath.Join(dir, "strings", "reader.go")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), "Reader", "Ruader")), 0o644); err != nil {
		t.Fatal(err)
	}
	in := json.RawMessage(`{"pattern":"Ruader","literal":true}`)
	for _, tc := range []struct {
		tool tools.Tool
		want string
	}{{plain, " in 1 file"}, {indexed, "No matches"}} {
		out, err := tc.tool.Run(t.Context(), in)
		if first, _, _ := strings.Cut(out.Text, "\n"); err != nil || !strings.Contains(first, tc.want) {
			t.Errorf("%q, %v; want %q", first, err, tc.want)
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	small := tools.SearchCodeOptions{MaxFileSize: 4 << 10}
	searchBoth(t, tools.NewSearchCode(ws, tools.Options{Search: small}),
		tools.NewSearchCode(ws, tools.Options{Search: small, Index: func() (tools.CodeIndex, string) { return idx, "" }}),
		map[string]any{"pattern": "func", "literal": true})
}

// The index's text passes the secret filter as a file read does: content
// that a later commit made a secret (the same bytes under a denied name)
// is kept out of a search through an index built before it.
func TestSearchCodeIndexTextStillFiltersSecrets(t *testing.T) {
	const secret = "TOKEN=index-text-secret-4417\n"
	r := gitexectest.Init(t, "")
	first := strings.TrimSpace(r.Commit(gitexectest.Commit{Write: map[string]string{"notes.txt": secret, "a.go": "package a\n"}}))
	idx := buildIndex(t, r.Dir, first)
	if _, ok := idx.Text("notes.txt"); !ok {
		t.Fatal("the index holds no text of notes.txt")
	}
	r.Commit(gitexectest.Commit{Write: map[string]string{".env": secret}, Force: true})
	_, indexed := newSearches(t, r.Dir, idx)
	out, err := indexed.Run(t.Context(), json.RawMessage(`{"pattern":"index-text-secret","literal":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Text, "notes.txt") || strings.Contains(out.Text, "4417") {
		t.Errorf("a secret's content came out of the index's text:\n%s", out.Text)
	}
}
