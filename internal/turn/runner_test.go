package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
)

// scriptModel asks for one read of README.md, then answers; it records
// every request.
type scriptModel struct {
	mu   sync.Mutex
	reqs []llm.Request
}

func (m *scriptModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	usage := llm.Usage{PromptTokens: 100, CompletionTokens: 10}
	if last := req.Messages[len(req.Messages)-1]; last.Role == llm.RoleTool {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "It is a widget."}, Usage: usage}, nil
	}
	call := llm.ToolCall{ID: "c1", Name: tools.ReadFileName, Arguments: `{"path":"README.md"}`}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, Usage: usage}, nil
}

func (m *scriptModel) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// readme is a toolbox of one tool that shows a README.
type readme struct{}

func (readme) Definitions() []tools.Definition {
	return []tools.Definition{{Name: tools.ReadFileName, Description: "read a file", Parameters: []byte(`{"type":"object"}`)}}
}

func (readme) Run(_ context.Context, c tools.Call) tools.Result {
	return tools.Result{CallID: c.ID, Name: c.Name, Content: "1\t# widget\n", Summary: "1 line"}
}

// events records what a turn's Observer is told.
type events struct {
	mu    sync.Mutex
	lines []string
}

func (e *events) add(s string) { e.mu.Lock(); e.lines = append(e.lines, s); e.mu.Unlock() }

func (e *events) ToolStarted(c Call) { e.add("start " + c.Name + " " + c.Args) }
func (e *events) ToolDone(c Call)    { e.add("done " + c.Name + " " + c.Summary) }
func (e *events) StepDone(s Step)    { e.add("step") }

var stopped = time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)

func newTestRunner(t *testing.T, store Store, model agent.Model) *Runner {
	t.Helper()
	r, err := New(Config{Store: store, Agent: agent.Config{Model: model}, Tools: func(context.Context, *repos.Lease, string) agent.Toolbox { return readme{} },
		Model: "m", Now: func() time.Time { return stopped }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const (
	commitA = "aaaaaaa1111111111111111111111111111111111"
	commitB = "bbbbbbb2222222222222222222222222222222222"
)

// The first question carries the repository's context, a follow-up at
// another commit says the checkout moved; each turn's steps are stored as
// they complete, and the thread's totals come from the session the turn
// was given, this turn added.
func TestRunPreambleMovedNoteAndTotals(t *testing.T) {
	store := session.NewMemory()
	model := &scriptModel{}
	r := newTestRunner(t, store, model)
	key := session.Key{Team: "T", Channel: "C", Thread: "1"}
	ask := func(id, question string, commit string, obs Observer) Result {
		t.Helper()
		loaded, err := r.Load(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(t.Context(), Request{Key: key, Session: loaded, Lease: &repos.Lease{Commit: commit}, Repo: "widget",
			Question: question, User: "U1", TurnID: id, Observer: obs})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res
	}

	obs := &events{}
	first := ask("t1", "what is it?", commitA, obs)
	if want := agent.ContextPreamble("widget", commitA, stopped, "U1") + "what is it?"; model.requests()[0].Messages[1].Content != want {
		t.Errorf("first question sent as %q, want %q", model.requests()[0].Messages[1].Content, want)
	}
	if first.Answer != "It is a widget." || !first.Started || first.Steps != 2 || first.ToolCalls != 1 || first.ThreadUsage != first.Usage {
		t.Errorf("first turn = %+v", first)
	}
	if want := []string{"start read_file " + `{"path":"README.md"}`, "done read_file 1 line", "step", "step"}; !slices.Equal(obs.lines, want) {
		t.Errorf("observer heard %q, want %q", obs.lines, want)
	}
	if err := store.EndTurn(t.Context(), "t1", session.TurnDone, ""); err != nil {
		t.Fatal(err)
	}

	second := ask("t2", "and then?", commitB, nil)
	reqs := model.requests()
	sent := reqs[2].Messages[len(reqs[2].Messages)-1].Content
	if want := "(The checkout moved from aaaaaaa to bbbbbbb since the last answer.)\n\nand then?"; sent != want {
		t.Errorf("follow-up sent as %q, want %q", sent, want)
	}
	info, _, err := store.SessionInfo(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if second.ThreadUsage != info.Usage || second.ThreadUsage == second.Usage || info.Commit != commitB {
		t.Errorf("thread totals %+v, store has %+v at %s; want the store's, past this turn's %+v, at the new commit", second.ThreadUsage, info.Usage, info.Commit, second.Usage)
	}
	sess, _, _ := store.Session(t.Context(), key)
	if n := len(sess.History); n != 8 {
		t.Errorf("history has %d messages, want 8 (two turns of question, call, result, answer)", n)
	}
}

// refusing is a store that another process took the turn from: it refuses
// every step.
type refusing struct{ session.Store }

func (refusing) AppendStep(context.Context, string, []llm.Message, llm.Usage) error {
	return fmt.Errorf("append step: %w", session.ErrTurnEnded)
}

// A turn whose steps the store refuses as ended was taken over: it stops
// at once and says so with ErrTakenOver.
func TestRunTakenOver(t *testing.T) {
	model := &scriptModel{}
	r := newTestRunner(t, refusing{session.NewMemory()}, model)
	key := session.Key{Team: "T", Channel: "C", Thread: "1"}
	res, err := r.Run(t.Context(), Request{Key: key, Lease: &repos.Lease{Commit: commitA}, Repo: "widget", Question: "q", TurnID: "t1"})
	if !errors.Is(err, ErrTakenOver) {
		t.Fatalf("Run = %v, want ErrTakenOver", err)
	}
	if n := len(model.requests()); n != 1 || !res.Started {
		t.Errorf("%d requests, started %v; want the one whose step was refused, started", n, res.Started)
	}
}

// A cut-off turn whose answer was stored before the cut finishes without a
// request; one cut mid-way goes on from its last stored step.
func TestResume(t *testing.T) {
	store := session.NewMemory()
	model := &scriptModel{}
	r := newTestRunner(t, store, model)
	key := session.Key{Team: "T", Channel: "C", Thread: "1"}
	if err := store.StartTurn(t.Context(), session.Turn{ID: "t1", Key: key}, "widget", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	call := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: tools.ReadFileName, Arguments: `{"path":"README.md"}`}}}
	if err := store.AppendStep(t.Context(), "t1", []llm.Message{call}, llm.Usage{PromptTokens: 50}); err != nil {
		t.Fatal(err)
	}
	if err := store.ContinueTurn(t.Context(), "t1", session.Turn{ID: "t2"}); err != nil {
		t.Fatal(err)
	}
	loaded, err := r.Load(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Resume(t.Context(), Request{Key: key, Session: loaded, Lease: &repos.Lease{Commit: commitA}, Repo: "widget", TurnID: "t2", Continues: "t1"}, false)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	// The unanswered call ran again; one request made the answer.
	if res.Answer != "It is a widget." || len(model.requests()) != 1 || res.ThreadUsage.PromptTokens != 150 {
		t.Errorf("resumed turn = %+v after %d requests; want the answer from one, thread totals 150 in", res, len(model.requests()))
	}

	loaded, _ = r.Load(t.Context(), key)
	if !EndsWithAnswer(loaded.Session.History) {
		t.Fatalf("history does not end with the answer: %+v", loaded.Session.History)
	}
	again, err := r.Resume(t.Context(), Request{Key: key, Session: loaded, Lease: &repos.Lease{Commit: commitA}, Repo: "widget", TurnID: "t3", Continues: "t2"}, false)
	if err != nil || again.Answer != "It is a widget." || len(model.requests()) != 1 {
		t.Errorf("resume of an answered turn = %+v, %v after %d requests; want the stored answer, no request", again, err, len(model.requests()))
	}
	if !strings.HasPrefix(again.Checked.Markdown, "It is a widget.") {
		t.Errorf("checked answer = %q", again.Checked.Markdown)
	}
}
