package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// newTicketServer is an MCP server over streamable HTTP with two
// read-only tools, search and stuck (which never returns while the test
// runs), and one that writes, close_ticket.
func newTicketServer(t *testing.T) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "tickets", Version: "v0"}, nil)
	release := make(chan struct{})
	sdk.AddTool(srv, &sdk.Tool{Name: "stuck", Description: "Never returns.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			<-release
			return nil, nil, nil
		})
	type query struct {
		Query string `json:"query"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "search", Description: "Search the tickets.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in query) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "TICKET-7 " + in.Query + " is flaky"}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "close_ticket", Description: "Close a ticket."},
		func(ctx context.Context, req *sdk.CallToolRequest, in query) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "closed"}}}, nil, nil
		})
	h := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(h.Close)
	t.Cleanup(func() { close(release) }) // first, so Close finds no call running
	return h.URL
}

// toolNames are the tools a model request offered.
func toolNames(r llmtest.Request) []string {
	var out []string
	for _, tl := range r.Chat.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

// ticketsWorld is the service over one repository, payments, readable
// everywhere, and the tickets server offered in channels (a YAML list).
func ticketsWorld(t *testing.T, model *llmtest.Server, channels string, settings ...map[string]string) *repoWorld {
	t.Helper()
	up, _ := newUpstream(t, map[string]string{"README.md": "# payments\n"})
	return newRepoWorld(t, fmt.Sprintf(`repos:
  - name: payments
    url: %s
    channels: ["*"]
mcp_servers:
  - name: tickets
    url: %s
    channels: %s
`, up.URL, newTicketServer(t), channels), model, settings...)
}

// A server's tools are offered in the channels its entry names, after
// askrepo's own; a call shows in the thread as a context line like a
// built-in one, its result reaches the model, and /healthz shows the
// server. In a channel it does not serve the model never sees them.
func TestMCPServerToolsInSlack(t *testing.T) {
	model := newScriptModel(t, func(n int, req llmtest.Request) (llmtest.Reply, <-chan struct{}) {
		if req.Last().Role == "user" && slices.Contains(toolNames(req), "tickets__search") {
			return toolCalls([2]string{"tickets__search", `{"query":"retry"}`}), nil
		}
		return answerMsg("Done."), nil
	})
	w := ticketsWorld(t, model, "[C1]")

	in := w.mention("C1", "is retry flaky?", "")
	w.waitTurns(1)
	out := w.mention("C2", "is retry flaky?", "")
	w.waitTurns(2)

	reqs := model.Requests()
	offered := toolNames(reqs[0])
	if i := slices.Index(offered, "tickets__search"); i != len(offered)-2 || offered[i+1] != "tickets__stuck" || slices.Contains(offered, "tickets__close_ticket") || !slices.Contains(offered, "read_file") {
		t.Errorf("tools offered in C1: %v; want askrepo's, then tickets__search and tickets__stuck", offered)
	}
	if got := w.toolResults(2); len(got) != 1 || got[0] != "TICKET-7 retry is flaky" {
		t.Errorf("tool results the model read: %q", got)
	}
	if thread := w.replies("C1", in); !strings.Contains(thread, "tickets__search") {
		t.Errorf("no context line for the server's tool:\n%s", thread)
	}
	for _, r := range reqs[2:] {
		if names := strings.Join(toolNames(r), ","); strings.Contains(names, "tickets__") {
			t.Errorf("the server's tools are offered in C2: %s", names)
		}
	}
	if got := w.replies("C2", out); !strings.Contains(got, "Done.") {
		t.Errorf("C2 thread: %s", got)
	}

	rec := httptest.NewRecorder()
	w.svc.bot.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var h struct {
		MCPServers []struct {
			Name, State string
			Tools       int
		} `json:"mcp_servers"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatalf("healthz: %v\n%s", err, rec.Body.String())
	}
	if len(h.MCPServers) != 1 || h.MCPServers[0].Name != "tickets" || h.MCPServers[0].State != "ready" || h.MCPServers[0].Tools != 2 {
		t.Errorf("healthz mcp_servers = %+v\n%s", h.MCPServers, rec.Body.String())
	}
}

// In the streamed UI a server's tool call is a task card like a built-in
// one: its title names the tool, it ends complete with a summary, and a
// call that fails (a tool the server does not offer) ends in error.
func TestMCPServerToolCardsWhenStreaming(t *testing.T) {
	model := newScriptModel(t, func(n int, req llmtest.Request) (llmtest.Reply, <-chan struct{}) {
		if req.Last().Role == "user" {
			return toolCalls([2]string{"tickets__search", `{"query":"retry"}`}, [2]string{"tickets__close_ticket", `{"query":"7"}`}), nil
		}
		return answerMsg("Done."), nil
	})
	w := ticketsWorld(t, model, `["*"]`, map[string]string{"BOT_SLACK_UI": "stream"})

	root := w.mention("C1", "is retry flaky?", "")
	w.waitTurns(1)
	var tasks []slacktest.Task
	for _, m := range w.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID) {
		if m.Via == "chat.startStream" {
			tasks = append(tasks, m.Tasks()...)
		}
	}
	if len(tasks) != 2 {
		t.Fatalf("task cards %+v, want one for each call", tasks)
	}
	if tk := tasks[0]; !strings.HasPrefix(tk.Title, "tickets__search") || tk.Status != "complete" || tk.Details == "" {
		t.Errorf("server tool card %+v, want tickets__search complete with a summary", tk)
	}
	if tk := tasks[1]; !strings.HasPrefix(tk.Title, "tickets__close_ticket") || tk.Status != "error" {
		t.Errorf("card of a tool the server does not offer %+v, want it in error", tk)
	}
}

// bot ask offers the tools of the servers whose channels hold "*", and
// prints their calls as it prints its own.
func TestMCPServerToolsInTerminal(t *testing.T) {
	repo := testRepo(t)
	url := newTicketServer(t)
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf("mcp_servers:\n  - name: tickets\n    url: %s\n    channels: [\"*\"]\n  - name: paytickets\n    url: %s\n    channels: [C1]\n", url, url))
	fake := newModel(t, nil,
		`{"tool_calls":[{"id":"a","type":"function","function":{"name":"tickets__search","arguments":"{\"query\":\"retry\"}"}}]}`,
		jsonContent("It is flaky."))
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "REPO_PATH": repo, "BOT_CONFIG": cfgFile})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "is retry flaky?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), `⏺ tickets__search`) || !strings.Contains(out.String(), "It is flaky.") {
		t.Errorf("stdout:\n%s", out.String())
	}
	offered := strings.Join(toolNames(fake.Requests()[0]), ",")
	if !strings.HasSuffix(offered, ",tickets__search,tickets__stuck") || strings.Contains(offered, "paytickets__") {
		t.Errorf("tools offered in the terminal: %s", offered)
	}
}

// A server's call that never returns ends at BOT_TOOL_TIMEOUT like a
// built-in one: the model reads that it timed out, and the turn answers.
func TestMCPServerCallTimesOut(t *testing.T) {
	repo := testRepo(t)
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf("mcp_servers:\n  - name: tickets\n    url: %s\n    channels: [\"*\"]\n", newTicketServer(t)))
	fake := newModel(t, nil,
		`{"tool_calls":[{"id":"a","type":"function","function":{"name":"tickets__stuck","arguments":"{}"}}]}`,
		jsonContent("The tracker did not answer."))
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "REPO_PATH": repo,
		"BOT_CONFIG": cfgFile, "BOT_TOOL_TIMEOUT": "300ms"})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "is retry flaky?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "The tracker did not answer.") {
		t.Errorf("stdout:\n%s", out.String())
	}
	var result string
	for _, m := range fake.Requests()[1].Chat.Messages {
		if m.Role == "tool" {
			result = m.Content
		}
	}
	if !strings.Contains(result, "timed out after 300ms") {
		t.Errorf("the model read %q", result)
	}
}
