package tools_test

import (
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/tools"
)

// find_symbol puts a definition that stands on its own before a member of
// the same name, even a shallower or exported one: the method with a body
// before the interface's method, the function before the struct field.
func TestFindSymbolRanksMembersLast(t *testing.T) {
	r := gitexectest.Init(t, "")
	commit := strings.TrimSpace(r.Commit(gitexectest.Commit{Write: map[string]string{
		"net.go":             "package net\n\ntype Addr interface {\n\tString() string\n}\n\ntype Config struct {\n\tRetry int\n}\n",
		"deep/netip/addr.go": "package netip\n\ntype Addr struct{}\n\nfunc (a Addr) String() string { return \"\" }\n\nfunc Retry() {}\n",
	}}))
	ws, err := tools.NewWorkspace(r.Dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	idx, err := index.Build(t.Context(), ws, commit, index.Options{Ctags: "off"})
	if err != nil {
		t.Fatal(err)
	}
	find := tools.NewFindSymbol(ws, tools.Options{Index: func() (tools.CodeIndex, string) { return idx, "" }})
	for _, tc := range []struct{ name, first string }{
		{"Addr.String", `deep/netip/addr.go:5  method  func (a Addr) String() string { return "" }`},
		{"Retry", "deep/netip/addr.go:7  func  func Retry() {}"},
	} {
		out := run(t, find, `{"name":"`+tc.name+`"}`)
		lines := strings.Split(out, "\n")
		if len(lines) < 3 || lines[2] != tc.first {
			t.Errorf("find_symbol %s: first hit is not %q:\n%s", tc.name, tc.first, out)
		}
	}
}
