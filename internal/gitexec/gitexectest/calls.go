package gitexectest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// LogCalls puts a git first on PATH, for the rest of the test, that logs
// each call the code under test makes (all start with --no-pager; the
// fixtures' own do not) and runs the real one. calls returns what it has
// logged so far, one line of arguments per call.
func LogCalls(t *testing.T) (calls func() []string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	bin := t.TempDir()
	log := filepath.Join(bin, "calls.log")
	script := "#!/bin/sh\ncase \"$1\" in --no-pager) echo \"$*\" >> '" + log + "' ;; esac\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		b, err := os.ReadFile(log)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// Count is how many of calls ran the git command cmd ("ls-files").
func Count(calls []string, cmd string) int {
	n := 0
	for _, c := range calls {
		if strings.Contains(" "+c+" ", " "+cmd+" ") {
			n++
		}
	}
	return n
}
