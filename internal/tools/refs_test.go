package tools

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// refCase is one call and the references its result must carry.
type refCase struct {
	name  string
	tool  string
	args  string
	limit int // the registry's output limit; 0 for the default
	want  []Ref
}

// checkRefs runs each case through a registry over ws, as the agent does,
// and compares the result's Refs.
func checkRefs(t *testing.T, ws *Workspace, cases []refCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := NewRegistryWith(RegistryOptions{OutputLimit: tc.limit}, Default(ws, Options{})...)
			res := reg.Run(t.Context(), Call{ID: "1", Name: tc.tool, Input: json.RawMessage(tc.args)})
			if diff := cmp.Diff(tc.want, res.Refs); diff != "" {
				t.Errorf("%s %s: refs (-want +got):\n%s\ncontent:\n%.500s", tc.tool, tc.args, diff, res.Content)
			}
		})
	}
}

func TestReadFileRefs(t *testing.T) {
	var long strings.Builder
	for i := 1; i <= 2500; i++ {
		long.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	ws := wsOf(t, map[string]string{
		"pay/retry.go": "package pay\n\nfunc Retry() {}\n",
		"twelve.txt":   strings.Repeat("x\n", 12),
		"big.go":       long.String(),
		"empty.txt":    "",
		// A file that quotes the continuation hint is still shown whole.
		"hint.txt": "a\nb; continue with offset=3]\nc\n",
	})
	// The cases of the links the Slack side made from the arguments and
	// the text, and the ones the text alone could not tell.
	checkRefs(t, ws, []refCase{
		{name: "whole file", tool: ReadFileName, args: `{"path":"pay/retry.go"}`, want: []Ref{{Path: "pay/retry.go"}}},
		{name: "a slice", tool: ReadFileName, args: `{"path":"./twelve.txt","offset":10,"limit":50}`, want: []Ref{{Path: "twelve.txt", Start: 10, End: 12}}},
		{name: "a limit from the top", tool: ReadFileName, args: `{"path":"twelve.txt","limit":3}`, want: []Ref{{Path: "twelve.txt", Start: 1, End: 3}}},
		{name: "offset 1 and no limit is the whole file", tool: ReadFileName, args: `{"path":"twelve.txt","offset":1}`, want: []Ref{{Path: "twelve.txt"}}},
		{name: "first page of a long file", tool: ReadFileName, args: `{"path":"big.go"}`, want: []Ref{{Path: "big.go", Start: 1, End: 2000}}},
		{name: "page cut by the output limit", tool: ReadFileName, args: `{"path":"big.go","offset":100}`, limit: 4096, want: []Ref{{Path: "big.go", Start: 100, End: 100 + shownOf(t, ws, `{"path":"big.go","offset":100}`, 4096) - 1}}},
		{name: "empty file", tool: ReadFileName, args: `{"path":"empty.txt","offset":5}`, want: []Ref{{Path: "empty.txt"}}},
		{name: "hint quoted in the file", tool: ReadFileName, args: `{"path":"hint.txt"}`, want: []Ref{{Path: "hint.txt"}}},
		{name: "failed read", tool: ReadFileName, args: `{"path":"nope.go"}`},
		{name: "path outside", tool: ReadFileName, args: `{"path":"../x"}`},
		{name: "offset past the end", tool: ReadFileName, args: `{"path":"twelve.txt","offset":13}`},
	})
}

// shownOf is how many lines read_file shows of args under limit.
func shownOf(t *testing.T, ws *Workspace, args string, limit int) int {
	t.Helper()
	res := NewRegistryWith(RegistryOptions{OutputLimit: limit}, NewReadFile(ws, Options{})).Run(t.Context(), Call{Name: ReadFileName, Input: json.RawMessage(args)})
	n := strings.Count(res.Content, "\n") - 1 // less the footer
	if n < 10 || !strings.Contains(res.Content, "; continue with offset=") {
		t.Fatalf("read_file under %d bytes shows %d lines, want a page cut short:\n%.300s", limit, n, res.Content)
	}
	return n
}

func TestGitToolRefs(t *testing.T) {
	repo := histFixture(t)
	ws := wsNew(t, repo.dir, WorkspaceOptions{})
	head := repo.sha["Add generated table"]
	guard := repo.sha["Guard against empty input"]
	checkRefs(t, ws, []refCase{
		{name: "blame range", tool: GitBlameName, args: `{"path":"lexer.go","start":3,"end":9}`, want: []Ref{{Path: "lexer.go", Start: 3, End: 9, Commit: head}}},
		{name: "blame from a line", tool: GitBlameName, args: `{"path":"lexer.go","start":4}`, want: []Ref{{Path: "lexer.go", Start: 4, End: 4, Commit: head}}},
		{name: "blame of the whole file", tool: GitBlameName, args: `{"path":"./lexer.go"}`, want: []Ref{{Path: "lexer.go", Commit: head}}},
		{name: "blame of a short sha", tool: GitBlameName, args: `{"path":"lexer.go","commit":"` + guard[:8] + `"}`, want: []Ref{{Path: "lexer.go", Commit: guard}}},
		{name: "blame of another commit", tool: GitBlameName, args: `{"path":"lexer.go","commit":"HEAD~1"}`, want: []Ref{{Path: "lexer.go", Commit: guard}}},
		{name: "failed blame", tool: GitBlameName, args: `{"path":"lexer.go","start":900}`},
		{name: "log of a file", tool: GitLogName, args: `{"path":"lexer.go"}`, want: []Ref{{Path: "lexer.go"}}},
		{name: "log of a directory", tool: GitLogName, args: `{"path":"config/"}`, want: []Ref{{Path: "config", Dir: true}}},
		{name: "log of the root", tool: GitLogName, args: `{"path":"."}`, want: []Ref{{Path: ".", Dir: true}}},
		{name: "log of everything", tool: GitLogName, args: `{}`},
		{name: "show a file's diff", tool: GitShowName, args: `{"commit":"HEAD~1","path":"lexer.go"}`, want: []Ref{{Path: "lexer.go", Commit: guard}}},
		{name: "show a commit", tool: GitShowName, args: `{"commit":"HEAD~1"}`},
		{name: "show a denied file", tool: GitShowName, args: `{"commit":"HEAD~1","path":".env"}`},
	})
}

func TestListSearchGlobRefs(t *testing.T) {
	ws := wsOf(t, map[string]string{
		"pay/retry.go":  "package pay\n\n// Retry retries.\nfunc Retry() {}\n",
		"pay/ledger.go": "package pay\n\nfunc Post() { Retry() }\nfunc Undo() { Retry() }\n",
		"README.md":     "nothing here\n",
	})
	checkRefs(t, ws, []refCase{
		{name: "list the root", tool: ListFilesName, args: `{}`, want: []Ref{{Path: ".", Dir: true}}},
		{name: "list a directory", tool: ListFilesName, args: `{"path":"./pay/","recursive":true}`, want: []Ref{{Path: "pay", Dir: true}}},
		{name: "list a missing directory", tool: ListFilesName, args: `{"path":"nope"}`},
		{name: "search hits, first hit per file", tool: SearchCodeName, args: `{"pattern":"Retry\\("}`,
			want: []Ref{{Path: "pay/ledger.go", Start: 3, End: 3}, {Path: "pay/retry.go", Start: 4, End: 4}}},
		{name: "search capped at the hits shown", tool: SearchCodeName, args: `{"pattern":"Retry\\(","max_results":2}`,
			want: []Ref{{Path: "pay/ledger.go", Start: 3, End: 3}}},
		{name: "search without hits", tool: SearchCodeName, args: `{"pattern":"nowhere"}`},
		{name: "glob names no file it read", tool: GlobName, args: `{"pattern":"*.go"}`},
	})
}
