package llm

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Tool results as the tools package renders them.
const (
	demoListing = `./ (8 entries)
.github/
LICENSE
README.md
cmd/
docs@ -> site/docs
go.mod
internal/
site/
`
	demoReadme = "1\t# askrepo\n" +
		"2\t\n" +
		"3\t[![CI](https://example.com/badge.svg)](https://example.com/ci)\n" +
		"4\t\n" +
		"5\tAsk questions about a code repository from Slack.\n" +
		"6\tEach thread is an agent session over a checkout.\n" +
		"7\t\n" +
		"8\t## Quick start\n" +
		"[lines 1–8 of 40; continue with offset=9]\n"
)

var demoTools = []ToolSpec{
	{Name: "glob", Parameters: json.RawMessage(`{"type":"object"}`)},
	{Name: "list_files", Parameters: json.RawMessage(`{"type":"object"}`)},
	{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)},
}

// step asks the demo for its next move and fails on error.
func step(t *testing.T, d *Demo, msgs []Message, tools []ToolSpec) Response {
	t.Helper()
	resp, err := d.Complete(t.Context(), Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Usage.PromptTokens <= 0 || resp.Usage.CompletionTokens <= 0 {
		t.Errorf("usage %+v, want rough non-zero estimates", resp.Usage)
	}
	return resp
}

// wantCall checks resp is exactly one call of name with args, and returns it.
func wantCall(t *testing.T, resp Response, name, args string) ToolCall {
	t.Helper()
	if len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("got %d tool calls (content %q), want one %s call", len(resp.Message.ToolCalls), resp.Message.Content, name)
	}
	c := resp.Message.ToolCalls[0]
	if c.Name != name || c.Arguments != args || c.ID == "" {
		t.Fatalf("call %+v, want %s %s with an id", c, name, args)
	}
	if resp.Message.Role != RoleAssistant {
		t.Errorf("role %q", resp.Message.Role)
	}
	return c
}

func TestDemoDrivesTheLoop(t *testing.T) {
	d := NewDemo()
	msgs := []Message{
		{Role: RoleSystem, Content: "You answer questions about one code repository."},
		{Role: RoleUser, Content: "<context>\nrepository: askrepo\n</context>\n\nWhat is this project?"},
	}

	// Step 1: list the root.
	r := step(t, d, msgs, demoTools)
	list := wantCall(t, r, "list_files", `{"path":"."}`)
	msgs = append(msgs, r.Message, Message{Role: RoleTool, ToolCallID: list.ID, Content: demoListing})

	// Step 2: the listing has a README, so read it.
	r = step(t, d, msgs, demoTools)
	read := wantCall(t, r, "read_file", `{"path":"README.md"}`)
	if read.ID == list.ID {
		t.Errorf("both calls have id %q", read.ID)
	}
	msgs = append(msgs, r.Message, Message{Role: RoleTool, ToolCallID: read.ID, Content: demoReadme})

	// Step 3: answer from what the tools returned.
	r = step(t, d, msgs, demoTools)
	if len(r.Message.ToolCalls) != 0 {
		t.Fatalf("step 3 made calls %+v, want an answer", r.Message.ToolCalls)
	}
	answer := r.Message.Content
	for _, s := range []string{
		"demo model", "“What is this project?”",
		"Top level (8 entries)", "`cmd/`", "`internal/`", "`docs`", "`go.mod`",
		"The README (`README.md`) is titled “askrepo”: Ask questions about a code repository from Slack. Each thread is an agent session over a checkout.",
		"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", ".env",
	} {
		if !strings.Contains(answer, s) {
			t.Errorf("answer does not contain %q:\n%s", s, answer)
		}
	}
	for _, s := range []string{"<context>", "Quick start", "badge.svg", "continue with offset", "(8 entries)`"} {
		if strings.Contains(answer, s) {
			t.Errorf("answer contains %q:\n%s", s, answer)
		}
	}
	if r.FinishReason != "stop" {
		t.Errorf("finish reason %q", r.FinishReason)
	}

	// A follow-up in the same thread starts over from the new question.
	msgs = append(msgs, r.Message, Message{Role: RoleUser, Content: "And where is the Slack code?"})
	r = step(t, d, msgs, demoTools)
	wantCall(t, r, "list_files", `{"path":"."}`)
}

func TestDemoFinalAnswers(t *testing.T) {
	q := Message{Role: RoleUser, Content: "How does it work?"}
	listCall := func(id string) Message {
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "list_files", Arguments: `{"path":"."}`}}}
	}
	readCall := func(id, path string) Message {
		return Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: "read_file", Arguments: `{"path":"` + path + `"}`}}}
	}
	tests := []struct {
		name    string
		msgs    []Message
		tools   []ToolSpec
		wantArg string // a read_file call expected instead of an answer
		says    []string
		not     []string
	}{
		{
			name:  "listing failed",
			msgs:  []Message{q, listCall("l"), {Role: RoleTool, ToolCallID: "l", Content: "error: the checkout is not ready yet", IsError: true}},
			tools: demoTools,
			says:  []string{"Listing the repository failed: error: the checkout is not ready yet", "OPENAI_API_KEY"},
			not:   []string{"README"},
		},
		{
			name:  "no README",
			msgs:  []Message{q, listCall("l"), {Role: RoleTool, ToolCallID: "l", Content: "./ (2 entries)\nmain.go\ngo.mod\n"}},
			tools: demoTools,
			says:  []string{"Top level (2 entries): `main.go`, `go.mod`", "no README"},
		},
		{
			name:    "lower-case readme.rst is read by its own name",
			msgs:    []Message{q, listCall("l"), {Role: RoleTool, ToolCallID: "l", Content: "./ (2 entries)\nreadme.rst\nsetup.py\n"}},
			tools:   demoTools,
			wantArg: `{"path":"readme.rst"}`,
		},
		{
			name: "README read failed",
			msgs: []Message{q, listCall("l"), {Role: RoleTool, ToolCallID: "l", Content: demoListing},
				readCall("r", "README.md"), {Role: RoleTool, ToolCallID: "r", Content: "README.md is on the deny-list", IsError: true}},
			tools: demoTools,
			says:  []string{"Top level (8 entries)", "Reading the README failed: README.md is on the deny-list"},
		},
		{
			name: "setext title and unnumbered text",
			msgs: []Message{q, listCall("l"), {Role: RoleTool, ToolCallID: "l", Content: "README\n"},
				readCall("r", "README"), {Role: RoleTool, ToolCallID: "r", Content: "Widget\n======\n\nWidgets for everyone.\n"}},
			tools: demoTools,
			says:  []string{"The README (`README`) is titled “Widget”: Widgets for everyone."},
		},
		{
			name:  "read_file not offered",
			msgs:  []Message{q, listCall("l"), {Role: RoleTool, ToolCallID: "l", Content: demoListing}},
			tools: []ToolSpec{{Name: "list_files"}},
			says:  []string{"There is a README (`README.md`), which I did not read."},
		},
		{
			name: "no tools offered: answers from the whole conversation after a loop note",
			msgs: []Message{q, listCall("l"), {Role: RoleTool, ToolCallID: "l", Content: demoListing},
				readCall("r", "README.md"), {Role: RoleTool, ToolCallID: "r", Content: demoReadme},
				{Role: RoleUser, Content: NoteTag + "The limit of 2 steps is reached. Answer now."}},
			says: []string{"“How does it work?”", "Top level (8 entries)", "The README (`README.md`) is titled “askrepo”"},
			not:  []string{"note from askrepo"},
		},
		{
			name: "no tools and no results",
			msgs: []Message{q},
			says: []string{"demo model", "no file listing", "OPENAI_API_KEY"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := step(t, NewDemo(), tt.msgs, tt.tools)
			if tt.wantArg != "" {
				wantCall(t, r, "read_file", tt.wantArg)
				return
			}
			if len(r.Message.ToolCalls) != 0 {
				t.Fatalf("made calls %+v, want an answer", r.Message.ToolCalls)
			}
			for _, s := range tt.says {
				if !strings.Contains(r.Message.Content, s) {
					t.Errorf("answer does not contain %q:\n%s", s, r.Message.Content)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(r.Message.Content, s) {
					t.Errorf("answer contains %q:\n%s", s, r.Message.Content)
				}
			}
		})
	}
}

func TestDemoTellsNotesFromQuestions(t *testing.T) {
	listed := []Message{
		{Role: RoleUser, Content: "FIRST question"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "l", Name: "list_files", Arguments: `{"path":"."}`}}},
		{Role: RoleTool, ToolCallID: "l", Content: "./ (1 entry)\nmain.go\n"},
	}
	stopped := []Message{
		{Role: RoleUser, Content: "FIRST question"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "l", Name: "list_files", Arguments: `{"path":"."}`}}},
		{Role: RoleTool, ToolCallID: "l", Content: "cancelled: the turn was stopped before this call finished", IsError: true},
	}
	tests := []struct {
		name     string
		msgs     []Message
		wantList bool   // the demo starts the turn over with list_files
		says     string // else the answer contains this
	}{
		{
			// A note after an empty reply offers tools again: the demo
			// must not list again but answer the question it was on.
			name: "a note mid-turn continues the turn",
			msgs: append(slices.Clone(listed), Message{Role: RoleUser, Content: NoteTag + "Your last reply was empty."}),
			says: "“FIRST question”",
		},
		{
			// The turn before was stopped, so the history ends on a tool
			// result; the next question is still a new turn.
			name:     "a question after a stopped turn starts a new one",
			msgs:     append(slices.Clone(stopped), Message{Role: RoleUser, Content: "SECOND question"}),
			wantList: true,
		},
		{
			name:     "a question right after an answered one starts a new one",
			msgs:     append(slices.Clone(listed), Message{Role: RoleAssistant, Content: "an answer"}, Message{Role: RoleUser, Content: "SECOND question"}),
			wantList: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := step(t, NewDemo(), tt.msgs, demoTools)
			if tt.wantList {
				wantCall(t, r, "list_files", `{"path":"."}`)
				return
			}
			if len(r.Message.ToolCalls) != 0 || !strings.Contains(r.Message.Content, tt.says) || !strings.Contains(r.Message.Content, "`main.go`") {
				t.Errorf("got %+v, want an answer to %s listing main.go", r.Message, tt.says)
			}
		})
	}
}

func TestDemoHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := NewDemo().Complete(ctx, Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestReadmeGist(t *testing.T) {
	tests := []struct {
		name, in, title, para string
	}{
		{"atx heading", "# Title\n\nFirst para\nwraps.\n\nSecond.", "Title", "First para wraps."},
		{"html header is skipped", "<h1 align=\"center\">X</h1>\n\n# Real\nBody text.\n", "Real", "Body text."},
		{"code fence is skipped", "# T\n```sh\ngo run .\n```\nAfter the fence.\n", "T", "After the fence."},
		{"no heading: first line is the title", "Just some words here.\n", "Just some words here.", ""},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			title, para := readmeGist(tt.in)
			if diff := cmp.Diff([2]string{tt.title, tt.para}, [2]string{title, para}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
