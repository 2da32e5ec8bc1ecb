package mcp_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/tools"
)

func TestListToolsOffersEveryToolWithRepo(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	want := append(tools.NewRegistry(tools.Default(nil, tools.Options{})...).Names(), "ask")
	slices.Sort(want)
	defs := map[string]tools.Definition{}
	for _, d := range tools.NewRegistry(tools.Default(nil, tools.Options{})...).Definitions() {
		defs[d.Name] = d
	}
	for _, tc := range []struct {
		token        string
		repoRequired bool
		mentions     []string
		never        string
	}{
		{ciToken, true, []string{"alpha", "beta"}, ""},
		{alphaToken, false, []string{"alpha"}, "beta"},
	} {
		cs := f.connect(t, tc.token)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
			if d, ok := defs[tool.Name]; ok && tool.Description != d.Description {
				t.Errorf("%s: description differs from the agent's", tool.Name)
			}
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Errorf("%s: not marked read-only", tool.Name)
			}
			schema := tool.InputSchema.(map[string]any)
			props := schema["properties"].(map[string]any)
			repo, ok := props["repo"].(map[string]any)
			if !ok {
				t.Fatalf("%s: no repo argument in %v", tool.Name, props)
			}
			desc := repo["description"].(string)
			for _, m := range tc.mentions {
				if !strings.Contains(desc, m) {
					t.Errorf("%s: repo's description %q does not name %s", tool.Name, desc, m)
				}
			}
			if tc.never != "" && strings.Contains(fmt.Sprint(schema), tc.never) {
				t.Errorf("%s: the schema shows %s a repository it may not read: %v", tool.Name, tc.never, schema)
			}
			required, _ := schema["required"].([]any)
			if tool.Name != "ask" && slices.Contains(required, any("repo")) != tc.repoRequired {
				t.Errorf("%s: repo required = %v, want %v", tool.Name, !tc.repoRequired, tc.repoRequired)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("tools = %v, want %v", got, want)
		}
	}
}

func TestCallEachTool(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	cs := f.connect(t, ciToken)
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"list_files", map[string]any{}, "main.go"},
		{"glob", map[string]any{"pattern": "*.go"}, "main.go"},
		{"search_code", map[string]any{"pattern": "func Hello"}, "main.go"},
		{"read_file", map[string]any{"path": "main.go"}, "func Hello()"},
		{"git_log", map[string]any{}, "add main"},
		{"git_show", map[string]any{"commit": "HEAD"}, "add main"},
		{"git_blame", map[string]any{"path": "main.go", "start": 3, "end": 3}, "func Hello()"},
		{"find_symbol", map[string]any{"name": "Hello"}, "main.go:3"},
		{"find_references", map[string]any{"name": "Hello"}, "main.go"},
		{"repo_map", map[string]any{}, "Hello"},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			tc.args["repo"] = "alpha"
			got, isErr := call(t, cs, tc.tool, tc.args)
			if isErr || !strings.Contains(got, tc.want) {
				t.Errorf("%s: error=%v, want %q in:\n%s", tc.tool, isErr, tc.want, got)
			}
		})
	}
	// Every tool of the agent is in the table.
	for _, name := range tools.NewRegistry(tools.Default(nil, tools.Options{})...).Names() {
		if !slices.ContainsFunc(tests, func(tc struct {
			tool string
			args map[string]any
			want string
		}) bool {
			return tc.tool == name
		}) {
			t.Errorf("%s is not called", name)
		}
	}
	if n := f.counter(t, "askrepo_mcp_calls_total", map[string]string{"token": "ci", "tool": "read_file", "outcome": "ok"}); n != 1 {
		t.Errorf("read_file calls counted = %v, want 1", n)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, `"token":"ci","tool":"read_file","repo":"alpha","outcome":"ok","duration"`) {
		t.Errorf("no log line of the read_file call in:\n%s", logs)
	}
}

func TestUnauthorized(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	for _, auth := range []string{"", "Bearer", "Bearer wrong-token-0123456789abcdef", "Basic " + ciToken, "Bearer " + ciToken + "x", "Bearer " + ciToken[:len(ciToken)-1]} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", auth, resp.StatusCode)
		}
	}
	if _, err := f.dial(t.Context(), "not-a-token-0123456789abcdef"); err == nil {
		t.Error("the SDK's client connected with a wrong token")
	}
	if n := f.counter(t, "askrepo_mcp_unauthorized_total", nil); n < 3 {
		t.Errorf("unauthorized counted %v times, want at least 3", n)
	}
}

func TestRepoTheTokenMayNotRead(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	cs := f.connect(t, alphaToken)
	// beta exists, gamma does not: the answers must not tell them apart.
	beta, isErr := call(t, cs, "read_file", map[string]any{"repo": "beta", "path": "README.md"})
	if !isErr || strings.Contains(beta, "# beta") {
		t.Fatalf("alpha's token read beta: %v %q", isErr, beta)
	}
	gamma, _ := call(t, cs, "read_file", map[string]any{"repo": "gamma", "path": "README.md"})
	if strings.ReplaceAll(beta, "beta", "gamma") != gamma {
		t.Errorf("a repository it may not read is told apart from one that does not exist:\n%s\n%s", beta, gamma)
	}
	if !strings.Contains(beta, "alpha") {
		t.Errorf("the refusal does not say what the token may read: %s", beta)
	}
	ask, isErr := call(t, cs, "ask", map[string]any{"repo": "beta", "question": "what is this?"})
	if !isErr || strings.Contains(ask, "# beta") {
		t.Errorf("ask over beta with alpha's token: %v %q", isErr, ask)
	}
	// Its only repository needs no naming.
	got, isErr := call(t, cs, "read_file", map[string]any{"path": "README.md"})
	if isErr || !strings.Contains(got, "# alpha") {
		t.Errorf("read_file without repo: %v %q", isErr, got)
	}
	// With two, the repository must be named.
	got, isErr = call(t, f.connect(t, ciToken), "read_file", map[string]any{"path": "README.md"})
	if !isErr || !strings.Contains(got, "alpha, beta") {
		t.Errorf("read_file without repo for a token of two: %v %q", isErr, got)
	}
	if n := f.counter(t, "askrepo_mcp_calls_total", map[string]string{"token": "alpha-only", "outcome": "refused"}); n == 0 {
		t.Error("refusals are not counted")
	}
}

func TestHostileArguments(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	cs := f.connect(t, ciToken)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "../../../../../../etc/passwd"}},
		{"read_file", map[string]any{"path": "/etc/passwd"}},
		{"read_file", map[string]any{"path": ".env"}},
		{"list_files", map[string]any{"path": "../.."}},
		{"search_code", map[string]any{"pattern": "root:", "path": "/etc"}},
		{"git_show", map[string]any{"commit": "--output=/tmp/x"}},
		{"read_file", map[string]any{"path": "main.go", "repo": "../beta"}},
		{"read_file", map[string]any{"path": "main.go", "repo": 7}},
	} {
		tc.args["repo"] = cmpOr(tc.args["repo"], "alpha")
		got, isErr := call(t, cs, tc.tool, tc.args)
		if !isErr {
			t.Errorf("%s %v: not an error: %s", tc.tool, tc.args, got)
		}
		for _, leak := range []string{"root:x:", "hunter2", f.alpha} {
			if strings.Contains(got, leak) {
				t.Errorf("%s %v: result shows %q: %s", tc.tool, tc.args, leak, got)
			}
		}
	}
}

func cmpOr(v any, def string) any {
	if v == nil {
		return def
	}
	return v
}

func TestRateLimit(t *testing.T) {
	f := newFixture(t, fixtureOptions{rate: 2})
	cs := f.connect(t, ciToken)
	for i := range 2 {
		if got, isErr := call(t, cs, "list_files", map[string]any{"repo": "alpha"}); isErr {
			t.Fatalf("call %d within the rate: %s", i+1, got)
		}
	}
	got, isErr := call(t, cs, "list_files", map[string]any{"repo": "alpha"})
	if !isErr || !strings.Contains(got, "2 tool calls a minute") || !strings.Contains(got, "try again in") {
		t.Errorf("third call: %v %q", isErr, got)
	}
	// Another token has a budget of its own.
	if got, isErr := call(t, f.connect(t, alphaToken), "list_files", nil); isErr {
		t.Errorf("another token limited too: %s", got)
	}
	if n := f.counter(t, "askrepo_mcp_calls_total", map[string]string{"token": "ci", "outcome": "limited"}); n != 1 {
		t.Errorf("limited calls counted = %v, want 1", n)
	}
}

func TestConcurrentClients(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 8 {
		wg.Go(func() {
			cs, err := f.dial(t.Context(), []string{ciToken, alphaToken}[i%2])
			if err != nil {
				errs <- err.Error()
				return
			}
			defer cs.Close()
			for range 3 {
				res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"repo": "alpha", "path": "main.go"}})
				switch {
				case err != nil:
					errs <- err.Error()
				case res.IsError || !strings.Contains(text(res), "func Hello"):
					errs <- text(res)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A reverse proxy on the same host reaches the server on a loopback
// address with the public Host: that is served, given the token.
func TestBehindAProxyOnTheSameHost(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: f.url,
		HTTPClient: &http.Client{Transport: bearer{token: ciToken, host: "askrepo.example.com"}}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect with Host askrepo.example.com: %v", err)
	}
	defer cs.Close()
	if got, isErr := call(t, cs, "read_file", map[string]any{"repo": "alpha", "path": "main.go"}); isErr {
		t.Errorf("read_file: %s", got)
	}
}

// A token naming a repository that is not configured stops the start,
// saying which.
func TestTokenOfAnUnknownRepository(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	_, err := mcp.New(mcp.Options{Repos: f.repos, Turns: f.runner, Store: f.store,
		Tokens: []config.MCPToken{{Name: "ci", Token: ciToken, Repos: []string{"alpha", "payments"}, Env: "ASKREPO_MCP_CI"}}})
	if err == nil || !strings.Contains(err.Error(), `token "ci" (ASKREPO_MCP_CI) names repositories that are not configured: payments`) ||
		strings.Contains(err.Error(), ciToken) {
		t.Errorf("err = %v", err)
	}
	// Without a token, there is no HTTP endpoint.
	srv, err := mcp.New(mcp.Options{Repos: f.repos, Turns: f.runner, Store: f.store})
	if err != nil || srv.Handler() != nil {
		t.Errorf("no tokens: %v, handler %v", err, srv.Handler())
	}
}
