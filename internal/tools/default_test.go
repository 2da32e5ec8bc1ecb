package tools

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The definitions are the start of every request to the model: a byte of
// difference, or another order, defeats the provider's prompt cache. The
// golden file is what the service sent before the tools took one
// constructor shape.
func TestDefaultDefinitionsAreStable(t *testing.T) {
	ws := wsNew(t, t.TempDir(), WorkspaceOptions{})
	got, err := json.MarshalIndent(NewRegistry(Default(ws, Options{})...).Definitions(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/definitions.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
		t.Errorf("definitions changed (-golden +got):\n%s", diff)
	}
	// Built twice, or with other options, the bytes are the same.
	again, _ := json.MarshalIndent(NewRegistry(Default(ws, Options{Git: GitOptions{Timeout: 1}, Search: SearchCodeOptions{Workers: 1}})...).Definitions(), "", "  ")
	if string(again) != string(got) {
		t.Error("the definitions depend on the options")
	}
}

func TestDefaultSet(t *testing.T) {
	ws := wsNew(t, t.TempDir(), WorkspaceOptions{})
	var names []string
	for _, tool := range Default(ws, Options{}) {
		names = append(names, tool.Definition().Name)
	}
	want := []string{ListFilesName, ReadFileName, SearchCodeName, GlobName, GitLogName, GitShowName, GitBlameName, FindSymbolName, FindReferencesName, RepoMapName}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Default (-want +got):\n%s", diff)
	}
}
