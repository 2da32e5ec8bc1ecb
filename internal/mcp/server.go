package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/turn"
	budgets "github.com/askrepo/askrepo/internal/usage"
)

// How askrepo serves MCP. Every read-only tool the agent has is a tool of
// the server, over the same registry (descriptions, output caps, deny-list,
// the workspace wall), with one more argument, repo, naming the repository
// to read; each call leases that repository at one commit for its run. ask
// runs the whole agent through the turn runner, as Slack and the terminal
// do, and answers with its citations checked at the commit it read.
//
// The HTTP side is stateless (every POST stands alone), so any replica can
// answer any request; what outlives a request, an ask's conversation, is in
// the session store every replica shares.

// Repos is what the server needs of the repositories; *repos.Manager has
// it.
type Repos interface {
	Repos() []string
	Acquire(ctx context.Context, name string) (*repos.Lease, error)
}

// Turns runs ask's turns; *turn.Runner has it.
type Turns interface {
	Load(ctx context.Context, key session.Key) (turn.Loaded, error)
	Run(ctx context.Context, req turn.Request) (turn.Result, error)
	// ModelName labels an ask's spend on /metrics.
	ModelName() string
}

// Store ends ask's turns; session.Store has it.
type Store interface {
	EndTurn(ctx context.Context, turnID string, state session.TurnState, errRef string) error
}

var (
	_ Repos = (*repos.Manager)(nil)
	_ Turns = (*turn.Runner)(nil)
	_ Store = session.Store(nil)
)

// Options configures a Server. Repos, Turns and Store are required.
type Options struct {
	Repos Repos
	Turns Turns
	Store Store
	// Tokens may call the HTTP endpoint; without any, Handler is nil.
	Tokens []config.MCPToken
	// Rate is the tool calls a minute one token may make; 0: no limit.
	Rate int
	// MaxAsks is how many asks may run at once, over all callers; one
	// more is refused, saying to try again. 0: no bound.
	MaxAsks int
	// ToolTimeout bounds one repository tool's call, TurnTimeout one ask.
	ToolTimeout time.Duration
	TurnTimeout time.Duration
	// Version is askrepo's, told to clients.
	Version string
	Logger  *slog.Logger
	// Registry, when set, gets the calls' metrics, and the usage series
	// an ask's spend is counted in (shared with Slack's turns).
	Registry prometheus.Registerer
	// Prices estimate the cost the usage series count; nil counts none.
	Prices budgets.Prices
}

// Server serves askrepo's tools over MCP, over HTTP (Handler) to the
// holders of its tokens and over stdio (ServeStdio) to the local user. It
// is safe for concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	// tokens are the callers of Handler; local is the one of ServeStdio,
	// who may read every repository.
	tokens []*access
	local  *access
	// servers holds each token's SDK server, built once: a token's tool
	// list names only the repositories it may read.
	servers map[string]*sdk.Server

	// asks holds a token for each ask running, when MaxAsks bounds them.
	asks chan struct{}

	mu      sync.Mutex
	busy    map[session.Key]bool // conversations with an ask running
	running map[string]int       // asks running, by caller
}

// New builds a Server, and checks that every token's repositories exist.
func New(opts Options) (*Server, error) {
	if opts.Repos == nil || opts.Turns == nil || opts.Store == nil {
		return nil, errors.New("mcp server: Repos, Turns and Store are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log.With("component", "mcp"), servers: map[string]*sdk.Server{}, busy: map[session.Key]bool{},
		running: map[string]int{}}
	m, err := newMetrics(opts.Registry, opts.Prices)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if opts.MaxAsks > 0 {
		s.asks = make(chan struct{}, opts.MaxAsks)
	}
	all := slices.Sorted(slices.Values(opts.Repos.Repos()))
	s.local = &access{name: "stdio", repos: all}
	var errs []error
	for _, t := range opts.Tokens {
		a, err := newAccess(t, all, opts.Rate)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.tokens = append(s.tokens, a)
		s.servers[a.name] = s.newSDKServer(a)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("MCP tokens: %w", err)
	}
	return s, nil
}

// instructions tell a client's model what the server is for.
const instructions = "askrepo reads git repositories that it keeps checked out and in sync. " +
	"Its tools are read-only and each reads one repository (the repo argument) at one commit. " +
	"ask runs askrepo's own agent over a repository and answers with citations checked at that commit; " +
	"pass the conversation it returns to ask a follow-up."

// newSDKServer builds the tools of one caller.
func (s *Server) newSDKServer(a *access) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "askrepo", Version: s.opts.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: s.sdkLog()})
	s.addRepoTools(srv, a)
	s.addAsk(srv, a)
	return srv
}

// Handler serves MCP over streamable HTTP, stateless, to the holders of
// the tokens: a request without one of them gets 401. It is nil when no
// token is configured, so /mcp stays off.
func (s *Server) Handler() http.Handler {
	if len(s.tokens) == 0 {
		return nil
	}
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		info := auth.TokenInfoFromContext(r.Context())
		if info == nil {
			return nil
		}
		return s.servers[info.UserID]
	}, &sdk.StreamableHTTPOptions{Stateless: true, Logger: s.sdkLog(), PropagateRequestCancellation: true,
		// The SDK refuses a request that reached a loopback address with
		// another Host, against DNS rebinding: a web page's script
		// reaching a server on the developer's machine. That is every
		// request a reverse proxy on the same host forwards, and a
		// script gains nothing here without a token, which every request
		// needs.
		DisableLocalhostProtection: true})
	return auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// ServeStdio serves MCP over in and out, newline-delimited JSON-RPC, to
// the local user, who may read every repository, until in ends or ctx is
// cancelled.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	srv := s.newSDKServer(s.local)
	err := srv.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopCloser{out}})
	if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("serve MCP over stdio: %w", err)
}

// sdkLog is the log the SDK writes to: its warnings and errors only. At
// info it logs every session's start and end, which stateless HTTP makes
// one of each per request; the calls are logged here, once each.
func (s *Server) sdkLog() *slog.Logger {
	return slog.New(warnOnly{s.log.Handler()})
}

type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(as)} }
func (w warnOnly) WithGroup(name string) slog.Handler    { return warnOnly{w.Handler.WithGroup(name)} }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// errorResult is a refusal or a failure, worded for the caller's model.
func errorResult(format string, args ...any) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf(format, args...)}}, IsError: true}
}

// resolve picks the repository a call reads: the one it names, which the
// caller must be allowed to read, or the caller's only one. A refusal
// names only the repositories the caller may read.
func (a *access) resolve(repo string) (string, error) {
	repo = strings.TrimSpace(repo)
	switch {
	case repo == "" && len(a.repos) == 1:
		return a.repos[0], nil
	case repo == "":
		return "", fmt.Errorf("name the repository to read in the repo argument: one of %s", strings.Join(a.repos, ", "))
	case !a.may(repo):
		return "", fmt.Errorf("unknown repository %s; the repositories you may read are: %s", quoted(repo), strings.Join(a.repos, ", "))
	}
	return repo, nil
}

// maxQuoted is how much of an argument a refusal quotes back.
const maxQuoted = 80

// quoted is s as a refusal quotes it: in Go syntax, cut to maxQuoted
// characters, so that a huge argument is not sent back whole.
func quoted(s string) string {
	if r := []rune(s); len(r) > maxQuoted {
		return strconv.Quote(string(r[:maxQuoted])) + "…"
	}
	return strconv.Quote(s)
}
