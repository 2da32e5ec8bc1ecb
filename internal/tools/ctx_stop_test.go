package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A read stops when its context ends, also inside one line of any length:
// lines were counted and ctx looked at every 4096 of them, so a file of a
// few enormous lines was read to its end whatever the deadline.
func TestReadFileStopsWithItsContext(t *testing.T) {
	dir := t.TempDir()
	wsWriteFiles(t, dir, map[string]string{"min.js": strings.Repeat(strings.Repeat("x", 1<<20)+"\n", 3)})
	tool := NewReadFile(wsNew(t, dir, WorkspaceOptions{}), Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out, err := runText(ctx, tool, json.RawMessage(`{"path":"min.js"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run on an ended context = %q, %v; want context.Canceled", out, err)
	}
}

// expiringCtx reports itself done from its n-th call of Err on, as a
// deadline that passes in the middle of a read would.
type expiringCtx struct {
	context.Context
	n     int64
	calls atomic.Int64
}

func (c *expiringCtx) Err() error {
	if c.calls.Add(1) >= c.n {
		return context.DeadlineExceeded
	}
	return nil
}

// When time runs out after the page is read, only the count of the lines
// after it is missing: the page comes back, and its footer says so and
// where to go on.
func TestReadFilePageWithoutTotal(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 50000; i++ {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("y", 40))
	}
	wsWriteFiles(t, dir, map[string]string{"log.txt": b.String()})
	tool := NewReadFile(wsNew(t, dir, WorkspaceOptions{}), Options{})
	// The first reads (64 KB each) give the page; a later one fails.
	ctx := &expiringCtx{Context: t.Context(), n: 5}
	out, err := runText(ctx, tool, json.RawMessage(`{"path":"log.txt","limit":10}`))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := "[lines 1–10; the file goes on, but its length was not counted before the time ran out; continue with offset=11]\n"
	if !strings.HasPrefix(out, "1\tline 1 ") || !strings.HasSuffix(out, want) {
		t.Errorf("output =\n%s\nwant the page and the footer %q", out, want)
	}
}

// A caller waiting for another's listing gives up when its own context
// ends, instead of waiting on a lock as long as the other takes.
func TestFilesWaitEndsWithContext(t *testing.T) {
	ws := wsNew(t, t.TempDir(), WorkspaceOptions{})
	ws.lock <- struct{}{} // a listing in progress
	defer func() { <-ws.lock }()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	if _, err := ws.Files(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Files = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("Files took %s with a 50ms deadline", took)
	}
}

func TestGlobRefusesCostlyPatterns(t *testing.T) {
	dir := t.TempDir()
	wsWriteFiles(t, dir, map[string]string{"a/b/c.go": "", "x.ts": ""})
	ws := wsNew(t, dir, WorkspaceOptions{})
	glob, search := NewGlob(ws, Options{}), NewSearchCode(ws, Options{})
	explode := strings.Repeat("{,}", 30) + "nothing"
	tests := []struct {
		name, pattern, want string
	}{
		{"braces that expand to a billion patterns", explode,
			`is too complex: its braces expand to 1048576 or more patterns, the limit is 64; use fewer {a,b} groups, or make several calls`},
		{"nested braces", "{a,b,c,d}{e,{f,g,h,i}}{j,k,l,m}*.go", `its braces expand to 80 patterns, the limit is 64`},
		{"a very long glob", strings.Repeat("*a", 200), `is 400 characters long, more than 256`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"pattern": tt.pattern})
			if out, err := runText(t.Context(), glob, in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("glob = %q, %v; want an error containing %q", out, err, tt.want)
			}
			in, _ = json.Marshal(map[string]string{"pattern": "x", "include": tt.pattern})
			if out, err := runText(t.Context(), search, in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("search_code include = %q, %v; want an error containing %q", out, err, tt.want)
			}
		})
	}
	for _, ok := range []string{"**/*.{go,ts,js,py}", "{cmd,internal}/**/*_test.go", `\{a,b\}{x,y}`, "{a,{b,c}}"} {
		in, _ := json.Marshal(map[string]string{"pattern": ok})
		if _, err := glob.Run(t.Context(), in); err != nil {
			t.Errorf("glob %q: %v", ok, err)
		}
	}
}

func TestGlobAlternatives(t *testing.T) {
	for glob, want := range map[string]int{
		"*.go": 1, "{a,b}": 2, "{a,b}{c,d,e}": 6, "{a,{b,c}}": 3, `\{a,b\}`: 1, "{,}{,}{,}": 8,
		"{a,b": 2, "x/{a,b}/{c}": 2, "{}": 1,
	} {
		if got := globAlternatives(glob); got != want {
			t.Errorf("globAlternatives(%q) = %d, want %d", glob, got, want)
		}
	}
}

// Suggesting a path costs an edit distance per file; a long path from the
// model in a large repository made that seconds of work (12 s for a 4 KB
// path among 20,000 files named index.js) that no deadline could stop.
func TestSuggestPathsBounded(t *testing.T) {
	var files []string
	for i := range 2000 {
		files = append(files, fmt.Sprintf("packages/pkg%04d/src/index.js", i))
	}
	if got := suggestPaths(t.Context(), strings.Repeat("ab/", 1300)+"index.js", files, 3); got != nil {
		t.Errorf("suggestions for a 3.9 KB path: %q, want none", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if got := suggestPaths(ctx, "packages/pkg0001/src/indx.js", files, 3); got != nil {
		t.Errorf("suggestions after the context ended: %q, want none", got)
	}
	got := suggestPaths(t.Context(), "packages/pkg0001/src/indx.js", files, 1)
	if len(got) != 1 || got[0] != "packages/pkg0001/src/index.js" {
		t.Errorf("suggestions = %q, want the same directory's index.js", got)
	}
}
