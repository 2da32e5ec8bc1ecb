package turn

import (
	"testing"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

// TestCallLink covers which context lines link what their call read, and
// to which lines: the one place a call read at the lease's commit; nothing
// for a failed call, a call that read several places or none, or one that
// read another commit.
func TestCallLink(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	base := "https://github.com/acme/pay/blob/" + sha + "/"
	lease := &repos.Lease{Commit: sha, Web: cite.Web{Base: "https://github.com/acme/pay", Kind: cite.KindGitHub}}
	for _, tc := range []struct {
		name   string
		refs   []tools.Ref
		failed bool
		want   string
	}{
		{"whole file", []tools.Ref{{Path: "pay/retry.go"}}, false, base + "pay/retry.go"},
		{"lines", []tools.Ref{{Path: "pay/retry.go", Start: 10, End: 12}}, false, base + "pay/retry.go#L10-L12"},
		{"the lease's commit", []tools.Ref{{Path: "a.go", Start: 3, End: 9, Commit: sha}}, false, base + "a.go#L3-L9"},
		{"another commit", []tools.Ref{{Path: "a.go", Start: 3, End: 9, Commit: "fedcba9876543210fedcba9876543210fedcba98"}}, false, ""},
		{"directory", []tools.Ref{{Path: "pay", Dir: true}}, false, "https://github.com/acme/pay/tree/" + sha + "/pay"},
		{"several places", []tools.Ref{{Path: "a.go", Start: 1, End: 1}, {Path: "b.go", Start: 2, End: 2}}, false, ""},
		{"nothing read", nil, false, ""},
		{"failed", []tools.Ref{{Path: "a.go"}}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := link(t.Context(), lease, tools.Result{Refs: tc.refs, IsError: tc.failed}); got != tc.want {
				t.Errorf("link = %q\nwant   %q", got, tc.want)
			}
		})
	}
	noWeb := &repos.Lease{Commit: sha}
	if got := link(t.Context(), noWeb, tools.Result{Refs: []tools.Ref{{Path: "a.go"}}}); got != "" {
		t.Errorf("without a web view, link = %q, want none", got)
	}
}
