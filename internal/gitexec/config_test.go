package gitexec_test

import (
	"slices"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/google/go-cmp/cmp"
)

// The settings asked for come back from the same call that switches the
// drivers off: the last value of a key set twice, a value with a newline
// whole, a key not set absent; and the drivers are off as WithoutDrivers
// leaves them.
func TestWithoutDriversReading(t *testing.T) {
	dir := gitexectest.NewRepo(t)
	for _, kv := range [][2]string{
		{"remote.origin.url", "https://example.com/first.git"},
		{"remote.origin.url", "https://example.com/last.git"},
		{"remote.upstream.url", "https://example.com/upstream.git"},
		{"user.note", "two\nlines"},
		{"filter.lfs.smudge", "evil %f"},
		{"diff.Weird Name.textconv", "evil"},
	} {
		gitexectest.Git(t, dir, "config", "--add", kv[0], kv[1])
	}
	g, values, err := gitexec.Git{Dir: dir}.WithoutDriversReading(t.Context(), "remote.origin.url", "user.note", "core.missing")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"remote.origin.url": "https://example.com/last.git", "user.note": "two\nlines"}
	if diff := cmp.Diff(want, values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	only, err := gitexec.Git{Dir: dir}.WithoutDrivers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	drivers := [][2]string{{"filter.lfs.smudge", ""}, {"diff.Weird Name.textconv", ""}}
	for _, c := range [][][2]string{g.Config, only.Config} {
		if !slices.Equal(c, drivers) {
			t.Errorf("drivers switched off = %q, want %q", c, drivers)
		}
	}

	// Nothing set at all: no values, no settings, no error.
	g, values, err = gitexec.Git{Dir: gitexectest.NewRepo(t)}.WithoutDriversReading(t.Context(), "remote.origin.url")
	if err != nil || values != nil || len(g.Config) != 0 {
		t.Errorf("on a plain repository = %q, %v, %v; want nothing", g.Config, values, err)
	}
}
