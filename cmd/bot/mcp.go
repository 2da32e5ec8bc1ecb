package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/session"
)

// runMCP serves MCP over stdin and stdout to the agent that started the
// process (bot mcp), until stdin ends: the repositories of the local
// configuration, every one of them, with no token, as bot ask reads them.
// stdout carries the protocol alone; logs go to stderr.
//
// Like bot ask, it keeps nothing in BOT_DATA_DIR of its own accord: its
// tools scan rather than build a code index, and ask's conversations live
// in memory as long as the process, which the client keeps for its
// session.
func runMCP(ctx context.Context, cfg config.Config, env func(string) (string, bool), pathOnly bool, stdin io.Reader, stdout, stderr io.Writer) error {
	log := newLogger(cfg, stderr)
	cfg.Index = false
	c, err := newCore(ctx, cfg, env, pathOnly, log, nil, false)
	if err != nil {
		return err
	}
	defer c.Close()
	store := session.NewMemory()
	srv, err := c.newMCP(store, nil, nil)
	if err != nil {
		return err
	}
	bg, stop := context.WithCancel(ctx)
	synced := make(chan struct{})
	go func() { defer close(synced); c.repos.Run(bg) }()
	defer func() { stop(); <-synced }()
	log.Info("serving MCP over stdio", "repos", c.repos.Repos(), "model", c.name)
	return srv.ServeStdio(ctx, stdin, stdout)
}

// mcpStore is what the MCP server keeps its conversations in: a session
// store that also sums usage, as the runner checks budgets with it.
type mcpStore interface {
	session.Store
	session.UsageTotals
}

// newMCP builds the MCP server over the core's repositories and a runner
// over store, with tokens for its HTTP side and reg for its metrics.
func (c *core) newMCP(store mcpStore, tokens []config.MCPToken, reg prometheus.Registerer) (*mcp.Server, error) {
	runner, err := c.newRunner(store)
	if err != nil {
		return nil, err
	}
	return mcp.New(mcp.Options{
		Repos: c.repos, Turns: runner, Store: store, Tokens: tokens, Rate: c.cfg.MCP.Rate, MaxAsks: c.cfg.Concurrency,
		ToolTimeout: c.cfg.ToolTimeout, TurnTimeout: c.cfg.TurnTimeout,
		Version: strings.TrimPrefix(versionLine(), "bot "), Logger: c.log, Registry: reg, Prices: c.cfg.Budgets.Prices,
	})
}

// openMCP builds the MCP server of bot serve: nil when no token is
// configured (/mcp is off), and a warning when tokens are but no listener
// would serve them. First it ends the asks an earlier stop cut off (see
// mcp.EndCutOff), whether /mcp is on now or not.
func (c *core) openMCP(ctx context.Context, store mcpStore, reg prometheus.Registerer, log *slog.Logger) (*mcp.Server, error) {
	// A minute on top of the longest an ask runs, for the clocks of the
	// store and this process.
	before := time.Now().Add(-c.cfg.TurnTimeout - time.Minute)
	if n, err := mcp.EndCutOff(ctx, store, before); err != nil {
		log.Warn("end the MCP asks a stop cut off; they stay unfinished", "err", err)
	} else if n > 0 {
		log.Info("ended the MCP asks a stop cut off", "count", n)
	}
	tokens := c.cfg.MCP.Tokens
	if len(tokens) == 0 {
		return nil, nil
	}
	if c.cfg.HTTPAddr == "" {
		log.Warn("MCP tokens are configured but BOT_HTTP_ADDR is empty: /mcp is off")
		return nil, nil
	}
	names := make([]string, 0, len(tokens))
	for _, t := range tokens {
		names = append(names, t.Name)
	}
	log.Info("serving MCP on /mcp", "tokens", names)
	return c.newMCP(store, tokens, reg)
}

// withMCP serves h, and /mcp with mcp when it is on (some token is
// configured).
func withMCP(h http.Handler, srv *mcp.Server) http.Handler {
	var m http.Handler
	if srv != nil {
		m = srv.Handler()
	}
	if m == nil {
		return h
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", m)
	mux.Handle("/", h)
	return mux
}
