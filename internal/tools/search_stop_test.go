package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/search"
)

// pathologicalFile writes a file of a few lines about 600 KB long each:
// ordinary text to grep, the worst input for a pattern whose program keeps
// hundreds of threads alive at every byte.
func pathologicalFile(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	line := strings.Repeat("a", 600<<10) + "Q\n"
	wsWriteFiles(t, dir, map[string]string{"min.js": strings.Repeat(line, 3)})
	return dir
}

// heavyPatterns cost seconds per MB in Go's regexp (13 s per MB for the
// first on the machine this was written on) and reach it by each of the
// engine's paths: a literal prefilter that leaves a long line to the
// regexp, and a pattern with nothing to prefilter on.
var heavyPatterns = []struct{ name, pattern string }{
	{"literal then regexp on a long line", `[a-z]{900}Q`},
	{"whole-buffer regexp", `\pL{600}\d`},
}

// A search stops inside a file when its time is up, says its result is
// partial, and leaves no worker running once it has returned.
func TestSearchCodeStopsInsideAFile(t *testing.T) {
	dir := pathologicalFile(t)
	ws := wsNew(t, dir, WorkspaceOptions{})
	for _, tt := range heavyPatterns {
		t.Run(tt.name, func(t *testing.T) {
			const timeout = 300 * time.Millisecond
			s := NewSearchCode(ws, Options{Search: SearchCodeOptions{Timeout: timeout}})
			began := time.Now()
			out, err := runSearch(t, s, map[string]any{"pattern": tt.pattern})
			took := time.Since(began)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := search.LiveWorkers(); n != 0 {
				t.Errorf("%d search workers still running after Run returned", n)
			}
			// A generous bound: it proves the search stopped, not how fast.
			if took > timeout+5*time.Second {
				t.Errorf("Run took %s with a %s timeout", took, timeout)
			}
			want := "Partial results: the search timed out after 300ms having searched 0 of 1 files (it stopped inside 1 more), so there may be more matches."
			if !strings.Contains(out, want) {
				t.Errorf("output does not say it is partial:\n%s\nwant it to contain %q", out, want)
			}
			if got := s.Summarize(out); !strings.HasSuffix(got, ", timed out") {
				t.Errorf("Summarize = %q, want it to end in %q", got, ", timed out")
			}
		})
	}
}

// The call's own deadline, when it comes before the search's timeout,
// stops the search just the same, and the note names the time it had.
func TestSearchCodeStopsAtTheCallDeadline(t *testing.T) {
	s := NewSearchCode(wsNew(t, pathologicalFile(t), WorkspaceOptions{}), Options{Search: SearchCodeOptions{Timeout: time.Hour}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	began := time.Now()
	out, err := runText(ctx, s, json.RawMessage(`{"pattern": "[a-z]{900}Q"}`))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(began); took > 7*time.Second {
		t.Errorf("Run took %s with a 2s deadline", took)
	}
	if n := search.LiveWorkers(); n != 0 {
		t.Errorf("%d search workers still running after Run returned", n)
	}
	for _, want := range []string{"Partial results: the search timed out after 2s", "(it stopped inside 1 more)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Cancelling the call mid-file ends the search with an error, promptly,
// and with its workers gone.
func TestSearchCodeCanceledInsideAFile(t *testing.T) {
	s := NewSearchCode(wsNew(t, pathologicalFile(t), WorkspaceOptions{}), Options{})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	began := time.Now()
	_, err := s.Run(ctx, json.RawMessage(`{"pattern": "[a-z]{900}Q"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Run took %s after being cancelled at 200ms", took)
	}
	if n := search.LiveWorkers(); n != 0 {
		t.Errorf("%d search workers still running after Run returned", n)
	}
}

func TestSearchCodePatternTooComplex(t *testing.T) {
	s := NewSearchCode(wsNew(t, t.TempDir(), WorkspaceOptions{}), Options{})
	// Words with no common prefix, which the compiler would share.
	r := rand.New(rand.NewPCG(3, 4))
	names := make([]string, 300)
	for i := range names {
		var b strings.Builder
		for range 8 {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		names[i] = b.String()
	}
	tests := []struct {
		name, pattern string
		wantInsts     int
	}{
		{"counted repetitions", `[a-z]{600}[0-9]{600}`, 1202},
		{"long alternation", strings.Join(names, "|"), 0},
		{"nested repetition", `(\w{30}\s){32}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runSearch(t, s, map[string]any{"pattern": tt.pattern})
			if !errors.Is(err, search.ErrTooComplex) {
				t.Fatalf("Run = %q, %v; want a too-complex error", out, err)
			}
			msg := err.Error()
			for _, want := range []string{"pattern too complex: its compiled program has ", " instructions, the limit is 1000;", "a literal part"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if tt.wantInsts > 0 && !strings.Contains(msg, fmt.Sprintf("has %d instructions", tt.wantInsts)) {
				t.Errorf("error %q does not give the size %d", msg, tt.wantInsts)
			}
		})
	}
	// What a model usually writes stays well inside the limit.
	for _, p := range []string{`\w+Error\(`, `[0-9a-f]{40}`, `(?i)func (New|Make)[A-Z]\w*\(`, strings.Join(names[:40], "|")} {
		if _, err := search.Compile(p, false, true); err != nil {
			t.Errorf("search.Compile(%q) = %v", p, err)
		}
	}
}
