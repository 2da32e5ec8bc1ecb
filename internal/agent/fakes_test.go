package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
)

// reply is one scripted model response.
type reply func(ctx context.Context, req llm.Request) (llm.Response, error)

// scriptedModel answers each request with the next reply of its script and
// records a deep copy of every request, plus the Tools slice exactly as sent
// (to check that it is the same slice every time).
type scriptedModel struct {
	t      testing.TB
	mu     sync.Mutex
	script []reply
	reqs   []llm.Request
	sent   [][]llm.ToolSpec
}

func newModel(t testing.TB, script ...reply) *scriptedModel {
	return &scriptedModel{t: t, script: script}
}

func (m *scriptedModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, copyRequest(req))
	m.sent = append(m.sent, req.Tools)
	i := len(m.reqs) - 1
	m.mu.Unlock()
	if i >= len(m.script) {
		m.t.Errorf("model got request %d, but the script has only %d replies", i+1, len(m.script))
		return llm.Response{}, errors.New("script exhausted")
	}
	return m.script[i](ctx, req)
}

func (m *scriptedModel) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

func copyRequest(req llm.Request) llm.Request {
	out := llm.Request{Messages: make([]llm.Message, len(req.Messages))}
	for i, m := range req.Messages {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		out.Messages[i] = m
	}
	for _, s := range req.Tools {
		s.Parameters = slices.Clone(s.Parameters)
		out.Tools = append(out.Tools, s)
	}
	return out
}

func usage(prompt, cached, completion int) llm.Usage {
	return llm.Usage{PromptTokens: prompt, CachedPromptTokens: cached, CompletionTokens: completion}
}

// answer replies with text and no tool calls.
func answer(text string, u llm.Usage) reply {
	return func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: text}, Usage: u, FinishReason: "stop"}, nil
	}
}

// callTools replies with tool calls (and finish_reason "stop", as several
// servers send, to check it is not trusted).
func callTools(u llm.Usage, calls ...llm.ToolCall) reply {
	return func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}, Usage: u, FinishReason: "stop"}, nil
	}
}

func fail(err error) reply {
	return func(context.Context, llm.Request) (llm.Response, error) { return llm.Response{}, err }
}

func tc(id, name, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: args}
}

// fakeTool is a tool of the test toolbox.
type fakeTool struct {
	name string
	run  func(ctx context.Context, input json.RawMessage) (string, error)
}

var _ tools.Tool = fakeTool{}

func (t fakeTool) Definition() tools.Definition {
	return tools.Definition{
		Name:        t.name,
		Description: "the " + t.name + " tool",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
	}
}

func (t fakeTool) Run(ctx context.Context, input json.RawMessage) (tools.Output, error) {
	out, err := t.run(ctx, input)
	return tools.Output{Text: out}, err
}

// newBox is the registry the service runs, over fake tools: what it
// promises (sorted definitions, always a result, an unknown name gets an
// error result listing the tools, a tool error becomes an error result)
// is what the loop is tested against.
func newBox(ts ...fakeTool) *tools.Registry {
	box := make([]tools.Tool, len(ts))
	for i, t := range ts {
		box[i] = t
	}
	return tools.NewRegistry(box...)
}

// fixed is a tool that returns out.
func fixed(name, out string) fakeTool {
	return fakeTool{name: name, run: func(context.Context, json.RawMessage) (string, error) { return out, nil }}
}

// event is one Observer call.
type event struct {
	kind  string // started, done, step
	step  int
	call  tools.Call
	res   tools.Result
	msgs  []llm.Message
	usage llm.Usage
}

type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) add(e event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) ToolStarted(step int, call tools.Call) {
	r.add(event{kind: "started", step: step, call: call})
}

func (r *recorder) ToolDone(step int, call tools.Call, res tools.Result, _ time.Duration) {
	r.add(event{kind: "done", step: step, call: call, res: res})
}

func (r *recorder) StepDone(step int, appended []llm.Message, u llm.Usage) {
	r.add(event{kind: "step", step: step, msgs: appended, usage: u})
}

func (r *recorder) all() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// stepped returns the messages of all StepDone events, concatenated.
func (r *recorder) stepped() []llm.Message {
	var out []llm.Message
	for _, e := range r.all() {
		if e.kind == "step" {
			out = append(out, e.msgs...)
		}
	}
	return out
}

// ids lists the call IDs of events of one kind, in order.
func (r *recorder) ids(kind string) []string {
	var out []string
	for _, e := range r.all() {
		if e.kind == kind {
			out = append(out, e.call.ID)
		}
	}
	return out
}

func newAgent(t testing.TB, cfg Config) *Agent {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func userMsg(text string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: text} }

func assistantCalls(calls ...llm.ToolCall) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: calls}
}

func toolMsg(id, content string, isErr bool) llm.Message {
	return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: content, IsError: isErr}
}

// checkPaired fails unless every tool call in msgs has exactly one result
// after it and every result answers a call: the invariant providers enforce.
func checkPaired(t testing.TB, msgs []llm.Message) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			if len(open) > 0 {
				t.Errorf("message %d: assistant message while calls %v have no result", i, open)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case llm.RoleTool:
			if !open[m.ToolCallID] {
				t.Errorf("message %d: result for call %q, which is not open", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			if len(open) > 0 {
				t.Errorf("message %d: %s message while calls %v have no result", i, m.Role, open)
			}
		}
	}
	if len(open) > 0 {
		t.Errorf("calls without result at the end: %v", open)
	}
}
