package tools

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// describeGolden holds calls with the short form the Slack context lines
// showed for them before each tool gave its own, so the tools' forms keep
// what people already read.
const describeGolden = "testdata/describe.golden.json"

// betterForms are the calls whose short form a tool now gives better than
// the generic form did: git_log's limit is a count of commits, not lines,
// and git_blame's start and end are a range of lines.
var betterForms = map[string]string{
	`git_log {"path":"lexer.go","limit":5}`:           "lexer.go limit=5",
	`git_blame {"path":"lexer.go","start":3,"end":9}`: "lexer.go:3-9",
	`git_blame {"path":"lexer.go","start":3}`:         "lexer.go:3-",
}

func TestDescribeKeepsTheShortForms(t *testing.T) {
	raw, err := os.ReadFile(describeGolden)
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct{ Tool, Args, Want string }
	if err := json.Unmarshal(raw, &cases); err != nil || len(cases) < 50 {
		t.Fatalf("%s: %d cases, %v", describeGolden, len(cases), err)
	}
	reg := NewRegistry(Default(wsNew(t, t.TempDir(), WorkspaceOptions{}), Options{})...)
	for _, c := range cases {
		want := c.Want
		if better, ok := betterForms[c.Tool+" "+c.Args]; ok {
			want = better
		}
		if got := reg.Describe(Call{Name: c.Tool, Input: json.RawMessage(c.Args)}); got != want {
			t.Errorf("Describe(%s %s) = %q, want %q", c.Tool, c.Args, got, want)
		}
	}
}

func TestDescribePerTool(t *testing.T) {
	ws := wsNew(t, t.TempDir(), WorkspaceOptions{})
	for _, tc := range []struct {
		tool Describer
		args string
		want string
	}{
		{NewReadFile(ws, Options{}), `{"path":"a.go","offset":10,"limit":71}`, "a.go:10-80"},
		{NewReadFile(ws, Options{}), `{"path":"a.go","offset":10}`, "a.go:10-"},
		{NewReadFile(ws, Options{}), `{"path":"a.go","limit":5}`, "a.go:1-5"},
		{NewReadFile(ws, Options{}), `{"offset":3}`, "offset=3"},
		{NewListFiles(ws, Options{}), `{}`, "."},
		{NewListFiles(ws, Options{}), `{"path":"cmd","recursive":true}`, "cmd (recursive)"},
		{NewSearchCode(ws, Options{}), `{"pattern":"retry","path":"internal/","include":"*.go"}`, `"retry" in internal/ (*.go)`},
		{NewFindSymbol(ws, Options{}), `{"name":"Client.Do","kind":"func"}`, "Client.Do (func)"},
		{NewFindSymbol(ws, Options{}), `{"name":"NewServer","path":"internal/"}`, "NewServer in internal/"},
		{NewFindReferences(ws, Options{}), `{"name":"NewServer","path":"cmd"}`, "NewServer in cmd"},
		{NewRepoMap(ws, Options{}), `{}`, "."},
		{NewRepoMap(ws, Options{}), `{"path":"internal","max_tokens":3000}`, "internal max_tokens=3000"},
		{NewSearchCode(ws, Options{}), `{"pattern":"x","literal":true,"max_results":5}`, `"x" literal max_results=5`},
		{NewGlob(ws, Options{}), `{"pattern":"*.go","path":"cmd"}`, `"*.go" in cmd`},
		{NewGitLog(ws, Options{}), `{"path":"a.go","grep":"fix"}`, "a.go grep=fix"},
		{NewGitShow(ws, Options{}), `{"commit":"HEAD~1","path":"a.go"}`, "a.go commit=HEAD~1"},
		{NewGitBlame(ws, Options{}), `{"path":"a.go","end":9}`, "a.go:1-9"},
		{NewGitBlame(ws, Options{}), `{"path":"a.go","start":3,"end":9,"commit":"v1"}`, "a.go:3-9 commit=v1"},
	} {
		if got := tc.tool.Describe(json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("%T.Describe(%s) = %q, want %q", tc.tool, tc.args, got, tc.want)
		}
	}
}

// What the model writes must not be able to start a line of its own on a
// context line, nor make it longer than one.
func TestDescribeIsOneShortLine(t *testing.T) {
	reg := NewRegistry(Default(wsNew(t, t.TempDir(), WorkspaceOptions{}), Options{})...)
	hostile := []string{
		"a\nb.go", "a\r\nb", "a\u2028b", "a\u2029b", "a\u0085b", "a\x1b[2Kb", "a\x00b", "a\vb\fc", "a\tb",
		strings.Repeat("é", 300), strings.Repeat("ab ", 100), strings.Repeat("\n", 50) + "x",
	}
	for _, name := range append(reg.Names(), "no_such_tool") {
		for _, h := range hostile {
			in, _ := json.Marshal(map[string]any{"path": h, "pattern": h, "commit": h, "grep": h, "extra\nkey": h})
			for _, input := range []string{string(in), `{"path": "` + h} {
				got := reg.Describe(Call{Name: name, Input: json.RawMessage(input)})
				if strings.ContainsFunc(got, isBreak) {
					t.Errorf("Describe(%s %q) = %q, holds a line break or control character", name, input, got)
				}
				if n := utf8.RuneCountInString(got); n > describeLimit {
					t.Errorf("Describe(%s %q) is %d runes, want at most %d", name, input, n, describeLimit)
				}
			}
		}
	}
}

func TestEveryDefaultToolDescribes(t *testing.T) {
	for _, tool := range Default(wsNew(t, t.TempDir(), WorkspaceOptions{}), Options{}) {
		if _, ok := tool.(Describer); !ok {
			t.Errorf("%s does not implement Describer", tool.Definition().Name)
		}
	}
}
