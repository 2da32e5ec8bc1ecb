package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/session"
)

const mcpTestToken = "ci-0123456789abcdef0123456789abcdef"

// mcpText is a tool result's text.
func mcpText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mcpCall(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return mcpText(res), res.IsError
}

// bot mcp is the real binary, started by the SDK's client as an MCP
// client starts a stdio server, answering with the demo model and with
// a scripted one.
func TestMCPOverStdio(t *testing.T) {
	ai := llmtest.New(t, readmeThenAnswer)
	for _, tc := range []struct {
		name   string
		env    []string
		answer string
	}{
		{"demo model", nil, "Widget turns sprockets into widgets"},
		{"scripted model", []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + ai.URL, "OPENAI_STREAM=false"}, "Answer to: what is this?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(botPath, "mcp")
			cmd.Dir = t.TempDir() // no stray .env, nothing written where it runs
			logs := &logtest.Buffer{}
			cmd.Stderr = logs
			repo := testRepo(t)
			gitexectest.Init(t, repo).Commit(gitexectest.Commit{Message: "widget"})
			cmd.Env = cleanEnv(append([]string{"REPO_PATH=" + repo, "REPO_NAME=widget", "HOME=" + t.TempDir()}, tc.env...)...)
			client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, logs.String())
			}
			defer cs.Close()
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			for _, want := range []string{"ask", "list_files", "read_file", "search_code", "git_log", "find_symbol"} {
				if !slices.Contains(names, want) {
					t.Errorf("tools %v lack %s", names, want)
				}
			}
			// Every tool, each with the arguments it needs.
			args := map[string]map[string]any{
				"read_file": {"path": "retry/backoff.go"}, "glob": {"pattern": "**/*.go"}, "search_code": {"pattern": "Backoff"},
				"git_blame": {"path": "retry/backoff.go"}, "find_symbol": {"name": "Backoff"}, "find_references": {"name": "Backoff"},
			}
			for _, name := range names {
				if name == "ask" {
					continue
				}
				if got, isErr := mcpCall(t, cs, name, args[name]); isErr {
					t.Errorf("%s: %s", name, got)
				}
			}
			if got, _ := mcpCall(t, cs, "read_file", args["read_file"]); !strings.Contains(got, "func Backoff") {
				t.Errorf("read_file: %q", got)
			}
			if got, isErr := mcpCall(t, cs, "read_file", map[string]any{"path": ".env"}); !isErr || strings.Contains(got, "hunter2") {
				t.Errorf("read_file .env: %v %q", isErr, got)
			}
			if got, isErr := mcpCall(t, cs, "ask", map[string]any{"question": "what is this?"}); isErr || !strings.Contains(got, tc.answer) {
				t.Errorf("ask: %v %q\n%s", isErr, got, logs.String())
			}
			if entries, _ := os.ReadDir(cmd.Dir); len(entries) != 0 {
				t.Errorf("bot mcp wrote %v where it ran", entries)
			}
		})
	}
}

// bot serve serves /mcp beside /healthz and /metrics, to the holders of
// BOT_MCP_TOKENS only.
func TestServeMCPOverHTTP(t *testing.T) {
	w := newWorld(t, "BOT_MCP_TOKENS=ci="+mcpTestToken)
	p := w.start()
	w.waitLog(p, `"msg":"health and metrics"`)
	addr := regexp.MustCompile(`"msg":"health and metrics","addr":"([^"]+)"`).FindStringSubmatch(p.logs.String())
	if addr == nil {
		t.Fatalf("no listener address in:\n%s", p.logs.String())
	}
	base := "http://" + addr[1]

	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp without a token: %d, want 401", resp.StatusCode)
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: base + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport(mcpTestToken)}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	if got, isErr := mcpCall(t, cs, "read_file", map[string]any{"path": "README.md"}); isErr || !strings.Contains(got, "# Widget") {
		t.Errorf("read_file: %v %q", isErr, got)
	}
	if got, isErr := mcpCall(t, cs, "ask", map[string]any{"question": "what is this?"}); isErr || !strings.Contains(got, "Answer to: what is this?") {
		t.Errorf("ask: %v %q", isErr, got)
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `askrepo_mcp_calls_total{outcome="ok",token="ci",tool="ask"} 1`) {
		t.Errorf("/metrics does not count the ask:\n%s", metrics)
	}
	// The ask's spend is in the usage series Slack's turns count in, so
	// their sum is what bot usage reads from the store.
	if !regexp.MustCompile(`askrepo_usage_answers_total\{model="[^"]+",repo="[^"]+"\} 1`).Match(metrics) {
		t.Errorf("/metrics does not count the ask's answer in askrepo_usage_answers_total:\n%s", metrics)
	}
	if strings.Contains(p.logs.String(), mcpTestToken) {
		t.Error("the log shows the token")
	}
}

type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// Without a token /mcp is off: the health listener answers it 404, as any
// path it does not serve.
func TestMCPOffWithoutTokens(t *testing.T) {
	health := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	for _, srv := range []*mcp.Server{nil, newMCPWithoutTokens(t)} {
		rec := httptest.NewRecorder()
		withMCP(health, srv).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}")))
		if rec.Code != http.StatusNotFound {
			t.Errorf("/mcp without tokens: %d, want 404", rec.Code)
		}
	}
}

func newMCPWithoutTokens(t *testing.T) *mcp.Server {
	cfg, err := loadConfig(envMap(map[string]string{"REPO_PATH": testRepo(t), "BOT_DATA_DIR": t.TempDir()}), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Index = false
	c, err := newCore(t.Context(), cfg, envMap(nil), false, slog.New(slog.DiscardHandler), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// An ask a stop cut off is ended at the start, /mcp on or not.
	store := session.NewMemory()
	cut := session.Turn{ID: "cut", Key: session.Key{Team: mcp.Team, Channel: "ci", Thread: "a"}, Started: time.Now().Add(-time.Hour)}
	if err := store.StartTurn(t.Context(), cut, "widget", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	srv, err := c.openMCP(t.Context(), store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if srv != nil {
		t.Fatal("an MCP server without tokens")
	}
	if left, err := store.Unfinished(t.Context()); err != nil || len(left) != 0 {
		t.Errorf("unfinished after the start: %+v, %v", left, err)
	}
	srv, err = c.newMCP(session.NewMemory(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
