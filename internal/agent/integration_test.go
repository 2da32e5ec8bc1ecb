package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
)

var _ Toolbox = (*tools.Registry)(nil)

// checkout writes a small repository into a temporary directory and returns
// the registry of the real tools over it.
func checkout(t testing.TB) *tools.Registry {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"README.md":           "# Widget\n\nWidget turns gadgets into widgets.\n",
		"main.go":             "package main\n\nfunc main() { run() }\n",
		"internal/run/run.go": "package run\n\n// Run starts the widget.\nfunc Run() {}\n",
		".env":                "API_KEY=sk-test-7f3a9c\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := tools.NewWorkspace(dir, tools.WorkspaceOptions{})
	if err != nil {
		t.Fatalf("NewWorkspace: %v", err)
	}
	return tools.NewRegistry(tools.NewListFiles(ws, tools.Options{}), tools.NewReadFile(ws, tools.Options{}), tools.NewGlob(ws, tools.Options{}))
}

// The three-round scenario against the real registry and tools: a listing,
// a read together with a misspelt tool name, a read of a denied file, then
// the answer.
func TestRunWithRegistry(t *testing.T) {
	reg := checkout(t)
	model := newModel(t,
		callTools(llm.Usage{}, tc("c1", "list_files", `{"path":".","recursive":true}`)),
		callTools(llm.Usage{},
			tc("c2", "read_file", `{"path":"internal/run/run.go"}`),
			tc("c3", "readfile", `{"path":"main.go"}`),
			tc("c4", "read_file", `{"path":".env"}`)),
		answer("`Run` starts the widget (internal/run/run.go:3-4).", llm.Usage{}),
	)
	a := newAgent(t, Config{Model: model, Tools: reg})
	rec := &recorder{}
	turn, err := a.Run(t.Context(), nil, userMsg("what does Run do?"), rec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := len(model.requests()); n != 3 {
		t.Fatalf("requests = %d, want 3", n)
	}
	checkPaired(t, turn.Appended)
	checkObserverOrder(t, rec.all())
	if got, want := rec.ids("started"), []string{"c1", "c2", "c3", "c4"}; !slices.Equal(got, want) {
		t.Errorf("ToolStarted order = %v, want %v", got, want)
	}

	results := map[string]llm.Message{}
	for _, m := range turn.Appended {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m
		}
	}
	tests := []struct {
		id      string
		isError bool
		has     string
	}{
		{"c1", false, "internal/run/run.go"},
		{"c2", false, "// Run starts the widget."},
		{"c3", true, "list_files"}, // the unknown tool's result names the real ones
		{"c4", true, ""},
	}
	for _, tt := range tests {
		m := results[tt.id]
		if m.IsError != tt.isError || !strings.Contains(m.Content, tt.has) {
			t.Errorf("result %s = %+v; want IsError %v and containing %q", tt.id, m, tt.isError, tt.has)
		}
	}
	if strings.Contains(results["c4"].Content, "sk-test-7f3a9c") {
		t.Errorf("denied file's content reached the model: %q", results["c4"].Content)
	}
	// The results of step 2 keep the call order.
	var order []string
	for _, m := range turn.Appended[4:7] {
		order = append(order, m.ToolCallID)
	}
	if !slices.Equal(order, []string{"c2", "c3", "c4"}) {
		t.Errorf("step 2 results in order %v", order)
	}
	// The tool specs are the registry's definitions, sorted by name.
	var names []string
	for _, s := range model.requests()[0].Tools {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, reg.Names()) {
		t.Errorf("tools sent = %v, want %v", names, reg.Names())
	}
}

// The demo model drives the real tools through the loop, for two turns of
// one session, and every request extends the one before.
func TestRunDemoModelTwoTurns(t *testing.T) {
	rec := &recorder{}
	model := &recordingModel{Model: llm.NewDemo()}
	a := newAgent(t, Config{Model: model, Tools: checkout(t)})
	first := userMsg(ContextPreamble("widget", "abc123", time.Time{}, "U1") + "what is this repository?")
	t1, err := a.Run(t.Context(), nil, first, rec)
	if err != nil {
		t.Fatalf("first Run: %v", err)
	}
	if !strings.Contains(t1.Answer, "Widget") || t1.Steps != 3 || t1.ToolCalls != 2 {
		t.Errorf("first turn = %+v; want the README's title after a listing and a read", t1)
	}
	t2, err := a.Run(t.Context(), t1.Appended, userMsg("and again?"), rec)
	if err != nil {
		t.Fatalf("second Run: %v", err)
	}
	if t2.Answer == "" || t2.Steps != 3 {
		t.Errorf("second turn = %+v", t2)
	}
	checkPaired(t, append(slices.Clone(t1.Appended), t2.Appended...))
	for i := 1; i < len(model.reqs); i++ {
		prev, cur := model.reqs[i-1].Messages, model.reqs[i].Messages
		if len(cur) <= len(prev) || !slices.EqualFunc(prev, cur[:len(prev)], sameMessage) {
			t.Errorf("request %d does not extend request %d", i+1, i)
		}
	}
}

type recordingModel struct {
	llm.Model
	reqs []llm.Request
}

func (m *recordingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.reqs = append(m.reqs, copyRequest(req))
	return m.Model.Complete(ctx, req)
}

func sameMessage(a, b llm.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID &&
		a.IsError == b.IsError && slices.Equal(a.ToolCalls, b.ToolCalls)
}

// The client's typed errors survive the loop's wrapping.
func TestRunWrapsClientErrors(t *testing.T) {
	apiErr := &llm.APIError{Kind: llm.ErrRateLimited, Host: "api.example.com", StatusCode: 429, Attempts: 3}
	model := newModel(t, fail(apiErr))
	a := newAgent(t, Config{Model: model, Tools: checkout(t)})
	_, err := a.Run(t.Context(), nil, userMsg("q"), nil)
	if !errors.Is(err, llm.ErrRateLimited) {
		t.Errorf("errors.Is(%v, llm.ErrRateLimited) = false", err)
	}
	var got *llm.APIError
	if !errors.As(err, &got) || got.StatusCode != 429 {
		t.Errorf("errors.As(%v, *llm.APIError) = %v", err, got)
	}
}
