package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
)

// A call whose time is up returns only once its tool has: a tool that
// stops a moment after its context ends is waited for, and the partial
// result it returns is what the model reads. One that never stops is
// logged and left behind after the grace period.
func TestRunWaitsForTheToolToStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var exited atomic.Bool
		never := make(chan struct{})
		defer close(never)
		box := newBox(
			fakeTool{name: "tidy", run: func(ctx context.Context, _ json.RawMessage) (string, error) {
				<-ctx.Done()
				time.Sleep(200 * time.Millisecond) // winding down its workers
				exited.Store(true)
				return "partial: ran out of time after covering half", nil
			}},
			fakeTool{name: "stubborn", run: func(context.Context, json.RawMessage) (string, error) {
				<-never
				return "late", nil
			}},
		)
		model := newModel(t,
			callTools(llm.Usage{}, tc("t", "tidy", `{}`), tc("s", "stubborn", `{}`)),
			answer("done", llm.Usage{}),
		)
		var logs bytes.Buffer
		a := newAgent(t, Config{Model: model, Tools: box, ToolTimeout: time.Second,
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		began := time.Now()
		turn, err := a.Run(context.Background(), nil, userMsg("go"), &recorder{})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !exited.Load() {
			t.Error("the call returned before its tool did")
		}
		if got, want := turn.Appended[2].Content, "partial: ran out of time after covering half"; got != want {
			t.Errorf("tidy's result = %q, want %q", got, want)
		}
		if got := turn.Appended[3].Content; !strings.HasPrefix(got, "timed out after 1s") {
			t.Errorf("stubborn's result = %q, want a timeout", got)
		}
		if took, want := time.Since(began), time.Second+toolStopGrace; took != want {
			t.Errorf("the step took %s, want the timeout plus the grace period, %s", took, want)
		}
		if line := logLine(logs.String(), "tool still running after its call ended"); !strings.Contains(line, "level=ERROR") || !strings.Contains(line, "tool=stubborn") {
			t.Errorf("no error logged for the tool that did not stop:\n%s", logs.String())
		}
	})
}

// The real search over a file built to be slow: the call comes back near
// its deadline with a result that says it is partial, and no goroutine of
// the search is left running once the turn is over.
func TestRunSearchStopsWithItsCall(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("a", 600<<10) + "Q\n"
	if err := os.WriteFile(filepath.Join(dir, "min.js"), []byte(strings.Repeat(line, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry(tools.NewSearchCode(ws, tools.Options{}))
	model := newModel(t,
		callTools(llm.Usage{}, tc("c1", "search_code", `{"pattern":"[a-z]{900}Q"}`)),
		answer("done", llm.Usage{}),
	)
	const timeout = time.Second
	a := newAgent(t, Config{Model: model, Tools: reg, ToolTimeout: timeout})
	before := runtime.NumGoroutine()
	began := time.Now()
	turn, err := a.Run(t.Context(), nil, userMsg("where is the long name?"), &recorder{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(began); took > timeout+5*time.Second {
		t.Errorf("Run took %s with a %s tool timeout", took, timeout)
	}
	got := turn.Appended[2].Content
	if !strings.Contains(got, "Partial results: the search timed out after") {
		t.Errorf("result does not say it is partial:\n%s", got)
	}
	// The goroutines of the call end as it returns; give the scheduler a
	// moment to let them go, far less than the search would still need.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the turn, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// logLine is the first line of logs holding msg, or "".
func logLine(logs, msg string) string {
	for line := range strings.Lines(logs) {
		if strings.Contains(line, msg) {
			return line
		}
	}
	return ""
}

// A reply asking for far more tool calls than a step may run gets every
// call answered, the first maxCallsPerStep run and the rest told to come
// back in another step, instead of running them all.
func TestStepRunsAtMostMaxCalls(t *testing.T) {
	var ran atomic.Int32
	box := newBox(fakeTool{name: "read", run: func(ctx context.Context, in json.RawMessage) (string, error) {
		ran.Add(1)
		return "ok " + string(in), nil
	}})
	const asked = maxCallsPerStep + 40
	calls := make([]llm.ToolCall, asked)
	for i := range calls {
		calls[i] = tc(fmt.Sprintf("c%d", i), "read", fmt.Sprintf(`{"path":"f%d"}`, i))
	}
	model := newModel(t, callTools(llm.Usage{}, calls...), answer("done", llm.Usage{}))
	a := newAgent(t, Config{Model: model, Tools: box})
	turn, err := a.Run(context.Background(), nil, userMsg("go"), &recorder{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := ran.Load(); got != maxCallsPerStep {
		t.Errorf("%d calls ran, want %d", got, maxCallsPerStep)
	}
	var results, refused int
	for _, m := range turn.Appended {
		if m.Role != llm.RoleTool {
			continue
		}
		results++
		if m.IsError && strings.Contains(m.Content, fmt.Sprintf("at most %d tools", maxCallsPerStep)) {
			refused++
		}
	}
	if results != asked || refused != asked-maxCallsPerStep {
		t.Errorf("%d results, %d refused; want %d and %d", results, refused, asked, asked-maxCallsPerStep)
	}
}
