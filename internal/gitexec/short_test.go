package gitexec

import (
	"strings"
	"testing"
)

// ShortCommit keeps 7 digits of a full SHA and leaves anything shorter
// (an empty commit, an abbreviation already) as it is.
func TestShortCommit(t *testing.T) {
	full := strings.Repeat("0123456789abcdef", 3)[:40]
	if got := ShortCommit(full); got != "0123456" {
		t.Errorf("ShortCommit(full SHA) = %q, want 0123456", got)
	}
	for _, in := range []string{"", "abc", "0123456"} {
		if got := ShortCommit(in); got != in {
			t.Errorf("ShortCommit(%q) = %q, want it unchanged", in, got)
		}
	}
}
