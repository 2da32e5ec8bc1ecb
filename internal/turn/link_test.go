package turn

import (
	"encoding/json"
	"testing"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

// TestCallLink covers which context lines link their file, and to which
// lines: the lines read_file showed, the range git_blame blamed, the
// directory list_files listed; nothing for failed calls, other tools, or
// a blame of another commit.
func TestCallLink(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	base := "https://github.com/acme/pay/blob/" + sha + "/"
	lease := &repos.Lease{Commit: sha, Web: cite.Web{Base: "https://github.com/acme/pay", Kind: cite.KindGitHub}}
	for _, tc := range []struct {
		name    string
		tool    string
		args    any
		content string
		failed  bool
		want    string
	}{
		{"whole file", tools.ReadFileName, map[string]any{"path": "pay/retry.go"}, "1\tpackage pay\n2\t\n3\tfunc Retry() {}\n", false, base + "pay/retry.go"},
		{"a slice", tools.ReadFileName, map[string]any{"path": "./pay/retry.go", "offset": 10, "limit": 50}, "10\tx\n11\ty\n12\tz\n", false, base + "pay/retry.go#L10-L12"},
		{"first page of a long file", tools.ReadFileName, map[string]any{"path": "big.go"}, "1\ta\n2\tb\n[lines 1–2 of 9000; continue with offset=3]\n", false, base + "big.go#L1-L2"},
		{"failed read", tools.ReadFileName, map[string]any{"path": "nope.go"}, "no such file", true, ""},
		{"blame range", tools.GitBlameName, map[string]any{"path": "pay/retry.go", "start": 3, "end": 9}, "", false, base + "pay/retry.go#L3-L9"},
		{"blame of the turn's commit", tools.GitBlameName, map[string]any{"path": "a.go", "commit": sha[:8]}, "", false, base + "a.go"},
		{"blame of another commit", tools.GitBlameName, map[string]any{"path": "a.go", "commit": "HEAD~3"}, "", false, ""},
		{"directory", tools.ListFilesName, map[string]any{"path": "pay"}, "", false, "https://github.com/acme/pay/tree/" + sha + "/pay"},
		{"search names no one file", tools.SearchCodeName, map[string]any{"pattern": "Retry"}, "", false, ""},
		{"path outside", tools.ReadFileName, map[string]any{"path": "../x"}, "1\tx\n", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(tc.args)
			got := link(t.Context(), lease, tools.Call{Name: tc.tool, Input: in}, tools.Result{Content: tc.content, IsError: tc.failed})
			if got != tc.want {
				t.Errorf("link = %q\nwant   %q", got, tc.want)
			}
		})
	}
	noWeb := &repos.Lease{Commit: sha}
	if got := link(t.Context(), noWeb, tools.Call{Name: tools.ReadFileName, Input: json.RawMessage(`{"path":"a.go"}`)}, tools.Result{}); got != "" {
		t.Errorf("without a web view, link = %q, want none", got)
	}
}
