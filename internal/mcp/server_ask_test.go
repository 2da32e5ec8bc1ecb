package mcp_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/session"
)

// answer is ask's structured result as a client reads it.
type answer struct {
	Answer       string `json:"answer"`
	Conversation string `json:"conversation"`
	Repo         string `json:"repo"`
	Commit       string `json:"commit"`
	Citations    []struct {
		Citation string `json:"citation"`
		Valid    bool   `json:"valid"`
		URL      string `json:"url"`
		Reason   string `json:"reason"`
	} `json:"citations"`
	ToolCalls []struct {
		Name    string `json:"name"`
		Args    string `json:"args"`
		Summary string `json:"summary"`
	} `json:"tool_calls"`
	Usage struct {
		Steps        int `json:"steps"`
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

func ask(t *testing.T, cs *sdk.ClientSession, args map[string]any) (answer, *sdk.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: mcp.AskName, Arguments: args})
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	var a answer
	if !res.IsError {
		structured(t, res, &a)
	}
	return a, res
}

var conversationID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestAskWithTheDemoModel(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	a, res := ask(t, f.connect(t, ciToken), map[string]any{"question": "what is this?", "repo": "alpha"})
	if res.IsError {
		t.Fatalf("ask failed: %s", text(res))
	}
	if !conversationID.MatchString(a.Conversation) || a.Repo != "alpha" || len(a.Commit) != 40 {
		t.Errorf("conversation %q, repo %q, commit %q", a.Conversation, a.Repo, a.Commit)
	}
	var names []string
	for _, c := range a.ToolCalls {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "list_files,read_file" || !strings.Contains(a.Answer, "Says hello") {
		t.Errorf("tool calls %v, answer:\n%s", names, a.Answer)
	}
	if !strings.Contains(text(res), a.Conversation) {
		t.Errorf("the text result does not give the conversation: %s", text(res))
	}
}

// scriptedModel is a model that reads main.go, then says where Hello is
// (with one made-up citation), and answers a follow-up in one line.
func scriptedModel(t *testing.T) (*llmtest.Server, agent.Model) {
	t.Helper()
	ai := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		switch {
		case r.Last().Role == "tool":
			return llmtest.Reply{Content: "Hello is defined at `main.go:3`; `main.go:99` does not exist."}
		case strings.Contains(r.LastUser(), "follow-up"):
			return llmtest.Reply{Content: "Still `main.go:3`."}
		}
		return llmtest.Reply{Calls: []llmtest.Call{{Name: "read_file", Args: `{"path":"main.go"}`}}}
	})
	model, err := llm.NewClient(llm.ClientConfig{BaseURL: ai.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return ai, model
}

func TestAskWithAScriptedModel(t *testing.T) {
	ai, model := scriptedModel(t)
	f := newFixture(t, fixtureOptions{model: model})
	cs := f.connect(t, ciToken)
	a, res := ask(t, cs, map[string]any{"question": "where is Hello?", "repo": "alpha"})
	if res.IsError {
		t.Fatalf("ask failed: %s", text(res))
	}
	if len(a.ToolCalls) != 1 || a.ToolCalls[0].Name != "read_file" || a.ToolCalls[0].Args != `{"path":"main.go"}` {
		t.Errorf("tool calls = %+v", a.ToolCalls)
	}
	if len(a.Citations) != 2 || !a.Citations[0].Valid || a.Citations[1].Valid || a.Citations[1].Reason == "" {
		t.Fatalf("citations = %+v", a.Citations)
	}
	link := alphaWeb + "/blob/" + a.Commit + "/main.go#L3"
	if a.Citations[0].URL != link || !strings.Contains(a.Answer, link) {
		t.Errorf("the valid citation is not a permalink at the commit read (%s): %+v\n%s", link, a.Citations[0], a.Answer)
	}
	if a.Usage.Steps != 2 || a.Usage.PromptTokens == 0 {
		t.Errorf("usage = %+v", a.Usage)
	}

	// The follow-up continues the conversation: the model sees the first
	// question and answer.
	b, res := ask(t, cs, map[string]any{"question": "a follow-up", "conversation": a.Conversation})
	if res.IsError || b.Conversation != a.Conversation || b.Repo != "alpha" {
		t.Fatalf("follow-up: %s %+v", text(res), b)
	}
	last := ai.Request(t, ai.Count()-1)
	if last.Has("user", "where is Hello?") != 1 || last.Has("assistant", "Hello is defined") != 1 {
		t.Errorf("the follow-up's request lacks the first turn: %s", last.Body)
	}
	s, ok, err := f.store.SessionInfo(t.Context(), session.Key{Team: mcp.Team, Channel: "ci", Thread: a.Conversation})
	if err != nil || !ok || s.Turns != 2 || s.Repo != "alpha" {
		t.Errorf("stored session: %+v %v %v", s, ok, err)
	}

	// Nobody else continues it, and it stays with its repository.
	for _, tc := range []struct {
		cs   *sdk.ClientSession
		args map[string]any
		want string
	}{
		{f.connect(t, alphaToken), map[string]any{"question": "q", "conversation": a.Conversation}, "unknown conversation"},
		{cs, map[string]any{"question": "q", "conversation": strings.Repeat("0", 32)}, "unknown conversation"},
		{cs, map[string]any{"question": "q", "conversation": "../../x"}, "unknown conversation"},
		{cs, map[string]any{"question": "q", "conversation": a.Conversation, "repo": "beta"}, "about alpha"},
		{cs, map[string]any{"question": "  "}, "needs a question"},
		{cs, map[string]any{"question": strings.Repeat("é", 40_001)}, "40001 characters long"},
	} {
		_, res := ask(t, tc.cs, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			args := fmt.Sprint(tc.args)
			t.Errorf("%s: %v %q, want an error saying %q", args[:min(len(args), 120)], res.IsError, text(res), tc.want)
		}
	}
}

// slowModel is a scripted model that answers a question with "slow" in
// it once release is closed, and any other at once with quick.
func slowModel(t *testing.T, quick string) (*llmtest.Server, *llm.Client, chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	ai := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if strings.Contains(r.LastUser(), "slow") {
			return llmtest.Reply{Content: "done", Wait: release}
		}
		return llmtest.Reply{Content: quick}
	})
	model, err := llm.NewClient(llm.ClientConfig{BaseURL: ai.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return ai, model, release
}

func TestAskOneAtATime(t *testing.T) {
	ai, model, release := slowModel(t, "first")
	f := newFixture(t, fixtureOptions{model: model, maxAsks: 1})
	cs := f.connect(t, alphaToken)
	a, res := ask(t, cs, map[string]any{"question": "start"})
	if res.IsError {
		t.Fatal(text(res))
	}
	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		_, res := ask(t, cs, map[string]any{"question": "slow", "conversation": a.Conversation})
		done <- res
	}()
	for n := 0; n < 2; {
		select {
		case n = <-ai.Arrived():
		case <-time.After(10 * time.Second):
			t.Fatal("the slow ask never reached the model")
		}
	}
	_, res = ask(t, cs, map[string]any{"question": "meanwhile", "conversation": a.Conversation})
	if !res.IsError || !strings.Contains(text(res), "still answering") {
		t.Errorf("a second ask while one runs: %v %q", res.IsError, text(res))
	}
	// Over MaxAsks, any other ask is refused too.
	_, res = ask(t, f.connect(t, ciToken), map[string]any{"question": "another", "repo": "beta"})
	if !res.IsError || !strings.Contains(text(res), "answering 1 questions already") {
		t.Errorf("an ask over MaxAsks: %v %q", res.IsError, text(res))
	}
	close(release)
	if res := <-done; res.IsError {
		t.Errorf("the slow ask: %s", text(res))
	}
}

// A client that asks for progress hears of each tool call as it ends.
func TestAskReportsProgress(t *testing.T) {
	ai := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if r.Last().Role == "tool" {
			return llmtest.Reply{Content: "It says hi."}
		}
		return llmtest.Reply{Calls: []llmtest.Call{{Name: "read_file", Args: `{"path":"main.go"}`}, {Name: "read_file", Args: `{"path":"nope.go"}`}}}
	})
	model, err := llm.NewClient(llm.ClientConfig{BaseURL: ai.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOptions{model: model})
	var mu sync.Mutex
	var heard []string
	cs, err := f.dialWith(t.Context(), alphaToken, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, fmt.Sprintf("%v %v %s", req.Params.ProgressToken, req.Params.Progress, req.Params.Message))
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: mcp.AskName, Arguments: map[string]any{"question": "what does it say?"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.IsError {
		t.Fatalf("ask: %v %s", err, text(res))
	}
	// Notifications arrive on their own; the result can come first.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := len(heard)
		mu.Unlock()
		if n >= 2 {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(heard)
	want := []string{"p1 1 read_file ", "p1 2 read_file "}
	if len(heard) != 2 || !strings.HasPrefix(heard[0], want[0]) || !strings.HasPrefix(heard[1], want[1]) ||
		!strings.Contains(strings.Join(heard, "\n"), "main.go") || !strings.Contains(strings.Join(heard, "\n"), "nope.go failed") {
		t.Errorf("progress heard:\n%s", strings.Join(heard, "\n"))
	}
}

// A client that gives up on an ask stops it: the model's request ends and
// the turn is stored as stopped, not left running.
func TestAskStopsWhenTheClientGoes(t *testing.T) {
	ai := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Hang: true} })
	model, err := llm.NewClient(llm.ClientConfig{BaseURL: ai.URL, APIKey: "sk-test", Model: "fake-model", MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fixtureOptions{model: model})
	cs := f.connect(t, alphaToken)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.AskName, Arguments: map[string]any{"question": "q"}})
		done <- err
	}()
	select {
	case <-ai.Arrived():
	case <-time.After(10 * time.Second):
		t.Fatal("the ask never reached the model")
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the cancelled call returned no error")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left, err := f.store.Unfinished(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ask still runs 10s after its client went: %+v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sessions, err := f.store.Sessions(t.Context(), 10)
	if err != nil || len(sessions) != 1 || sessions[0].Turns != 0 {
		t.Errorf("sessions = %+v, %v; want one, with no turn done", sessions, err)
	}
}
