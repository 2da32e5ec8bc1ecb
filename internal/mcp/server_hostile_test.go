package mcp_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/repos"
)

// A repository whose clone fails is refused in words of its own: the
// clone's error names the host's paths and the remote, which are the
// operators' (the log, /healthz), never a token holder's.
func TestUnavailableRepositoryShowsNoHostDetail(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	m, err := repos.New(t.Context(), []repos.Spec{
		{Name: "broken", URL: "file:///nonexistent/secret-host-path.git", Channels: []string{"*"}},
	}, repos.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	srv, err := mcp.New(mcp.Options{Repos: m, Turns: f.runner, Store: f.store,
		Tokens: []config.MCPToken{{Name: "ci", Token: ciToken, Env: "BOT_MCP_TOKENS"}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	f.url = hs.URL
	cs := f.connect(t, ciToken)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "README.md"}},
		{mcp.AskName, map[string]any{"question": "what is this?"}},
	} {
		got, isErr := call(t, cs, tc.tool, tc.args)
		if !isErr || !strings.Contains(got, "broken") || !strings.Contains(got, "not available") {
			t.Errorf("%s: %v %q, want a refusal saying broken is not available", tc.tool, isErr, got)
		}
		for _, leak := range []string{"secret-host-path", "nonexistent", "file://", "clone"} {
			if strings.Contains(got, leak) {
				t.Errorf("%s: the refusal shows %q: %s", tc.tool, leak, got)
			}
		}
	}
}
