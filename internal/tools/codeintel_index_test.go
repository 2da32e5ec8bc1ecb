package tools_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/tools"
)

// indexedSymbols is the symbol tools' checkout, committed, with the real
// index of its commit.
func indexedSymbols(t *testing.T) (*tools.Workspace, tools.Options) {
	t.Helper()
	r := gitexectest.Init(t, "")
	commit := strings.TrimSpace(r.Commit(gitexectest.Commit{Write: tools.SymbolFiles, Force: true}))
	ws, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	idx, err := index.Build(t.Context(), ws, commit, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ws, tools.Options{Index: func() (tools.CodeIndex, string) { return idx, "" }}
}

func run(t *testing.T, tool tools.Tool, args string) string {
	t.Helper()
	out, err := tool.Run(t.Context(), json.RawMessage(args))
	if err != nil {
		return "error: " + err.Error()
	}
	return out.Text
}

// noted is an index that covers less than it could, and says so.
type noted struct{ tools.CodeIndex }

func (noted) Note() string { return "universal-ctags is not installed: only Go files have symbols." }

func TestSymbolToolsThroughIndex(t *testing.T) {
	ws, opts := indexedSymbols(t)
	building := tools.Options{Index: func() (tools.CodeIndex, string) {
		return nil, "The code index for this commit is still being built; these results come from a scan."
	}}
	idx, _ := opts.Index()
	withNote := tools.Options{Index: func() (tools.CodeIndex, string) { return noted{idx}, "" }}
	tests := []struct {
		name   string
		tool   tools.Tool
		args   string
		want   string
		absent []string
	}{
		{
			name: "find_symbol ranks exact, code, hand-written, shallow",
			tool: tools.NewFindSymbol(ws, opts), args: `{"name":"NewServer"}`,
			want: "3 definitions\n\n" +
				"lib/server.go:9  func  func NewServer(addr string) *Server\n    NewServer returns a Server on addr.\n" +
				"deep/a/b/server.go:3  func  func NewServer() {}\n" +
				"gen/zz_generated.go:5  func  func NewServer() {}\n",
		},
		{
			name: "find_symbol Type.Method",
			tool: tools.NewFindSymbol(ws, opts), args: `{"name":"Server.Do"}`,
			want: "1 definition\n\nlib/server.go:14  method  func (s *Server) Do() error { return nil }\n    Do handles one request.\n",
		},
		{
			name: "find_symbol offers close names",
			tool: tools.NewFindSymbol(ws, opts), args: `{"name":"NewSrver"}`,
			want: "No definition named \"NewSrver\".\nClose names: NewServer, new_server.\nTry another spelling, no kind or path, or search_code for the text.\n",
		},
		{
			name: "find_symbol: the index's note, once",
			tool: tools.NewFindSymbol(ws, withNote), args: `{"name":"Server","kind":"class"}`,
			want: "1 definition\n\nweb/app.py:1  class  class Server:\nNote: universal-ctags is not installed: only Go files have symbols.\n",
		},
		{
			name: "find_symbol while the index is built: a scan, and the source's note",
			tool: tools.NewFindSymbol(ws, building), args: `{"name":"Server.Do"}`,
			want: "1 definition\n\nlib/server.go:14  method  func (s *Server) Do() error { return nil }\n    Do handles one request.\n" +
				"Note: The code index for this commit is still being built; these results come from a scan.\n",
		},
		{
			name: "find_references: definitions, their package, the rest",
			tool: tools.NewFindReferences(ws, opts), args: `{"name":"NewServer"}`,
			want: "6 references to \"NewServer\" in 6 files\n\n" +
				"deep/a/b/server.go\n  3 [def]: func NewServer() {}\n" +
				"gen/zz_generated.go\n  5 [def]: func NewServer() {}\n" +
				"lib/server.go\n  9 [def]: func NewServer(addr string) *Server {\n" +
				"lib/options.go\n  3: var defaultServer = NewServer(\":80\")\n" +
				"lib/server_test.go\n  5: func TestNewServer(t *testing.T) { _ = NewServer(\"\") }\n" +
				"cmd/bot/main.go\n  5: s := lib.NewServer(\"x\") // start\n",
		},
		// The wall: denied files are not in the index, so no tool names them.
		{name: "find_references never shows a denied file", tool: tools.NewFindReferences(ws, opts), args: `{"name":"SECRET"}`, want: "No uses of \"SECRET\".\nCheck the spelling with find_symbol, or use search_code for text that is not an identifier.\n"},
		{name: "find_symbol never shows a denied file", tool: tools.NewFindSymbol(ws, opts), args: `{"name":"NewServer","path":".env"}`, want: "error: denied (may hold secrets): \".env\" is on the deny-list of secret files and is never shown; answer without it"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, tc.tool, tc.args); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// repo_map lays out the files in the order the index ranks them, with its
// counts of references, other languages too.
func TestRepoMapThroughIndex(t *testing.T) {
	ws, opts := indexedSymbols(t)
	idx, _ := opts.Index()
	var want []string
	for _, f := range idx.Files() {
		if len(f.Symbols) > 0 && !f.Symbols[0].Test && !f.Symbols[0].Generated {
			want = append(want, fmt.Sprintf("%s (%d ref", f.Path, f.Refs))
		}
	}
	out := run(t, tools.NewRepoMap(ws, opts), `{}`)
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "Map of") && strings.Contains(line, " ref") {
			got = append(got, line[:strings.Index(line, " ref")+4])
		}
	}
	if !strings.HasPrefix(out, "Map of the repository: 5 of 5 files, most referenced first") || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got\n%s\nwant the files in the order %q", out, want)
	}
	for _, part := range []string{
		")\n  type Server struct\n  func NewServer(addr string) *Server\n  func (s *Server) Do() error { return nil }\n",
		"web/app.py (",
		")\n  class Server:\n  def new_server():\n",
	} {
		if !strings.Contains(out, part) {
			t.Errorf("the map lacks %q:\n%s", part, out)
		}
	}
	one := run(t, tools.NewRepoMap(ws, opts), `{"path":"web/app.py","max_tokens":1}`)
	if !strings.HasPrefix(one, "Map of web/app.py: 1 of 1 file, most referenced first") || !strings.Contains(one, "  class Server:\n  def new_server():\n") {
		t.Errorf("one file:\n%s", one)
	}
}
