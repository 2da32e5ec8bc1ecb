package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/askrepo/askrepo/internal/turn"
)

// Tokens of the fixture: ci reads every repository, alphaOnly only alpha.
const (
	ciToken    = "ci-0123456789abcdef0123456789abcdef"
	alphaToken = "alpha-0123456789abcdef0123456789abcd"
)

// alphaWeb is alpha's web view, for permalinks.
const alphaWeb = "https://github.com/acme/alpha"

// mainGo is alpha's one Go file; Hello is defined on its line 3.
const mainGo = "package main\n\nfunc Hello() string { return \"hi\" }\n\nfunc main() { _ = Hello() }\n"

// fixture is a served MCP endpoint over two real git repositories, alpha
// and beta, with its store, metrics and log.
type fixture struct {
	srv    *mcp.Server
	url    string
	repos  *repos.Manager
	runner *turn.Runner
	store  *session.Memory
	reg    *prometheus.Registry
	logs   *logtest.Buffer
	alpha  string // alpha's checkout directory
}

type fixtureOptions struct {
	rate    int
	maxAsks int
	model   agent.Model
	// quota, when set, is asked before each new question, as budgets are.
	quota turn.Quota
}

func newFixture(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	// alpha is a clone whose commit is on its remote, so citations of it
	// link to the web view.
	remote := gitexectest.NewRemote(t)
	remote.Push("main", gitexectest.Commit{Message: "add main", Write: map[string]string{
		"README.md": "# alpha\n\nSays hello.\n", "main.go": mainGo, ".env": "SECRET=hunter2\n"}, Force: true})
	alpha := remote.Clone(t)
	beta := gitexectest.Init(t, "")
	beta.Commit(gitexectest.Commit{Write: map[string]string{"README.md": "# beta\n"}})
	m, err := repos.New(t.Context(), []repos.Spec{
		{Name: "alpha", Path: alpha.Dir, Channels: []string{"*"}, WebURL: alphaWeb, WebKind: "github"},
		{Name: "beta", Path: beta.Dir, Channels: []string{"*"}},
	}, repos.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	f := &fixture{store: session.NewMemory(), reg: prometheus.NewRegistry(), logs: &logtest.Buffer{}, alpha: alpha.Dir}
	model := o.model
	if model == nil {
		model = llm.NewDemo()
	}
	f.repos, f.runner = m, newRunner(t, f.store, model, o.quota)
	f.srv, f.url = serve(t, mcp.Options{Repos: m, Turns: f.runner, Store: f.store, Rate: o.rate, MaxAsks: o.maxAsks,
		Logger: slog.New(slog.NewJSONHandler(f.logs, nil)), Registry: f.reg})
	return f
}

// newRunner runs turns over store with model and the read-only tools,
// asking quota (when not nil) before each new question.
func newRunner(t *testing.T, store session.Store, model agent.Model, quota turn.Quota) *turn.Runner {
	t.Helper()
	runner, err := turn.New(turn.Config{Store: store, Agent: agent.Config{Model: model},
		Tools: func(_ context.Context, l *repos.Lease, _ string) agent.Toolbox {
			return tools.NewRegistry(tools.Default(l.Workspace, tools.Options{Index: l.Index})...)
		}, Model: "m", Quota: quota})
	if err != nil {
		t.Fatal(err)
	}
	return runner
}

// serve serves o over HTTP with the fixture's tokens, and returns the
// server and its URL.
func serve(t *testing.T, o mcp.Options) (*mcp.Server, string) {
	t.Helper()
	o.Version = "test"
	// A test that goes wrong ends within it, not in ten minutes.
	o.TurnTimeout = 30 * time.Second
	o.Tokens = []config.MCPToken{
		{Name: "ci", Token: ciToken, Env: "BOT_MCP_TOKENS"},
		{Name: "alpha-only", Token: alphaToken, Repos: []string{"alpha"}, Env: "ALPHA"},
	}
	srv, err := mcp.New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

// bearer adds a token to every request, and sends them with host as the
// Host header when it is set.
type bearer struct{ token, host string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.host != "" {
		r.Host = b.host
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect is the SDK's own client, over streamable HTTP with token.
func (f *fixture) connect(t *testing.T, token string) *sdk.ClientSession {
	t.Helper()
	cs, err := f.dial(t.Context(), token)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func (f *fixture) dial(ctx context.Context, token string) (*sdk.ClientSession, error) {
	return f.dialWith(ctx, token, nil)
}

func (f *fixture) dialWith(ctx context.Context, token string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: f.url, HTTPClient: &http.Client{Transport: bearer{token: token}},
		DisableStandaloneSSE: true, MaxRetries: -1}, nil)
}

// call calls a tool and returns its text and whether it is an error.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return text(res), res.IsError
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured decodes a result's structured content into v.
func structured(t *testing.T, res *sdk.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// counter is the value of the series of name with labels, 0 when absent.
func (f *fixture) counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
