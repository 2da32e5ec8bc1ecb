package mcp_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/askrepo/askrepo/internal/turn"
)

// serveCI serves a server of opts with the ci token alone in f's place,
// and connects to it with that token.
func (f *fixture) serveCI(t *testing.T, opts mcp.Options) *sdk.ClientSession {
	t.Helper()
	opts.Tokens = []config.MCPToken{{Name: "ci", Token: ciToken, Env: "BOT_MCP_TOKENS"}}
	srv, err := mcp.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	f.url = hs.URL
	return f.connect(t, ciToken)
}

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
	cs := f.serveCI(t, mcp.Options{Repos: m, Turns: f.runner, Store: f.store})
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

// A store that fails is the operators' to hear about: a follow-up's
// caller gets a reference, not the store's words (a database's host or
// file, its driver's message).
func TestStoreFailureShowsNoStoreDetail(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	dbPath := filepath.Join(t.TempDir(), "askrepo-private-store.db")
	store, err := session.OpenSQLite(t.Context(), dbPath, session.SQLiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := turn.New(turn.Config{Store: store, Agent: agent.Config{Model: llm.NewDemo()},
		Tools: func(_ context.Context, l *repos.Lease, _ string) agent.Toolbox {
			return tools.NewRegistry(tools.Default(l.Workspace, tools.Options{})...)
		}, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	cs := f.serveCI(t, mcp.Options{Repos: f.repos, Turns: runner, Store: store})
	_ = store.Close()
	got, isErr := call(t, cs, mcp.AskName, map[string]any{"question": "and then?", "conversation": strings.Repeat("ab", 16)})
	if !isErr || !strings.Contains(got, "reference") {
		t.Errorf("ask over a failed store: %v %q, want a refusal with a reference", isErr, got)
	}
	for _, leak := range []string{"sql", "database", "askrepo-private-store", "session"} {
		if strings.Contains(got, leak) {
			t.Errorf("the refusal shows %q: %s", leak, got)
		}
	}
}

// A refusal quotes what the caller sent only in short: a huge argument
// is not sent back whole, to fill the caller's context.
func TestRefusalQuotesHugeArgumentsInShort(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	cs := f.connect(t, ciToken)
	huge := strings.Repeat("x", 200_000)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"repo": huge, "path": "README.md"}},
		{mcp.AskName, map[string]any{"repo": huge, "question": "what is this?"}},
		{mcp.AskName, map[string]any{"conversation": huge, "question": "and then?"}},
	} {
		got, isErr := call(t, cs, tc.tool, tc.args)
		if !isErr || len(got) > 1000 {
			t.Errorf("%s: %v, a refusal of %d bytes, want a short one", tc.tool, isErr, len(got))
		}
	}
}

// One token cannot take every place for asks: it runs at most half of
// them at once, so the others' asks still run.
func TestOneTokenCannotTakeEveryAsk(t *testing.T) {
	ai, model, release := slowModel(t, "quick")
	f := newFixture(t, fixtureOptions{model: model, maxAsks: 2})
	cs := f.connect(t, alphaToken)
	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		_, res := ask(t, cs, map[string]any{"question": "slow"})
		done <- res
	}()
	select {
	case <-ai.Arrived():
	case <-time.After(10 * time.Second):
		t.Fatal("the slow ask never reached the model")
	}
	_, res := ask(t, cs, map[string]any{"question": "another, in a new conversation"})
	if !res.IsError || !strings.Contains(text(res), "this token") {
		t.Errorf("a second ask of the same token while it holds its share: %v %q", res.IsError, text(res))
	}
	if _, res := ask(t, f.connect(t, ciToken), map[string]any{"question": "mine", "repo": "beta"}); res.IsError {
		t.Errorf("another token's ask: %s", text(res))
	}
	close(release)
	if res := <-done; res.IsError {
		t.Errorf("the slow ask: %s", text(res))
	}
}
