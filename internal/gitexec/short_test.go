package gitexec

import "testing"

func TestShortCommit(t *testing.T) {
	for in, want := range map[string]string{
		"":         "",
		"abc":      "abc",
		"0123456":  "0123456",
		"01234567": "0123456",
		"0123456789abcdef0123456789abcdef01234567": "0123456",
	} {
		if got := ShortCommit(in); got != want {
			t.Errorf("ShortCommit(%q) = %q, want %q", in, got, want)
		}
	}
}
