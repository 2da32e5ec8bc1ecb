package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/budget"
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/logging"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/askrepo/askrepo/internal/tracing"
	"github.com/askrepo/askrepo/internal/turn"
	"github.com/askrepo/askrepo/internal/usage"
)

// demoNotice is printed when no API key is set, so nobody mistakes the demo
// model's answers for a real model's.
const demoNotice = "Using the demo model (OPENAI_API_KEY is not set): it lists the repo and reads its README, nothing more.\n" +
	"For real answers set OPENAI_API_KEY (and OPENAI_BASE_URL/OPENAI_MODEL for other providers) in .env or the environment.\n"

// newLogger builds the one logger every package narrows with its own
// component name (see package logging); it is passed on unnamed.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	return logging.New(w, cfg.LogFormat, level)
}

// terminalLogger keeps the terminal for the conversation: only warnings
// and errors, as text, unless debug logging was asked for (-v).
func terminalLogger(cfg config.Config, w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if cfg.LogLevel == "debug" {
		level = slog.LevelDebug
	}
	return logging.New(w, "text", level)
}

// core is what both the terminal and Slack need: the repositories, the
// model, and how to build the loop over one checkout.
type core struct {
	repos *repos.Manager
	model agent.Model
	name  string // the model's name
	demo  bool
	cfg   config.Config
	log   *slog.Logger
	// agentLog, when set, replaces log for the agent loop: the terminal
	// shows each turn's outcome itself and would print its error twice.
	agentLog *slog.Logger
	// cal learns the model's tokens per estimated token; the agent's
	// in-turn guard and the compaction between turns share it and budget.
	cal    *budget.Calibrator
	budget int
	// tracer traces turns; nil (off) unless an OTLP endpoint is set.
	tracer *tracing.Tracer
	// mcp are the MCP servers of BOT_CONFIG whose tools the agent may
	// call; nil without any.
	mcp *mcp.Clients
}

// tracerFlushTimeout bounds the export of the last spans at exit: a
// collector that is down must not hold a shutdown up.
const tracerFlushTimeout = 5 * time.Second

// Close sends the spans not yet exported, stops the MCP servers and
// closes the repositories.
func (c *core) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), tracerFlushTimeout)
	defer cancel()
	if err := c.tracer.Shutdown(ctx); err != nil {
		c.log.Warn("export the last traces", "err", err)
	}
	if c.mcp != nil {
		_ = c.mcp.Close()
	}
	return c.repos.Close()
}

// newCore opens the repositories (REPO_PATH, or the repos of BOT_CONFIG,
// cloning url repos into BOT_DATA_DIR) and the model client. env looks up
// the variables token_env and ssh_key_env name, as the settings were;
// pathOnly uses REPO_PATH alone even when BOT_CONFIG lists repos (--repo);
// onSync, when set, hears of every fetch; oneCall is for a process that
// runs one tool call (bot tool), which checks of a saved code index only
// what the call reads (see index.Indexer.CheckOnLoad), and uses a clone
// fetched less than BOT_REPO_SYNC ago as it is (see repos.Options.OneShot).
func newCore(ctx context.Context, cfg config.Config, env func(string) (string, bool), pathOnly bool, log *slog.Logger, onSync func(string, error), oneCall bool) (*core, error) {
	from := repos.FromConfig
	if pathOnly {
		from = repos.PathOnly
	}
	specs, err := from(cfg)
	if err != nil {
		return nil, fmt.Errorf("repositories: %w", err)
	}
	if len(specs) == 1 && specs[0].Path != "" {
		if _, err := os.Stat(specs[0].Path); errors.Is(err, fs.ErrNotExist) {
			return nil, missingRepo(specs[0].Path)
		}
	}
	var model agent.Model
	name := cfg.OpenAIModel
	demo := !cfg.OpenAIAPIKey.Set()
	if demo {
		model, name = llm.NewDemo(), "demo"
	} else {
		client, err := llm.NewClient(llm.ClientConfig{
			BaseURL:        cfg.OpenAIBaseURL,
			APIKey:         cfg.OpenAIAPIKey.Reveal(),
			Model:          cfg.OpenAIModel,
			Stream:         cfg.OpenAIStream,
			Temperature:    cfg.OpenAITemperature,
			AttemptTimeout: cfg.OpenAITimeout,
			Logger:         log,
		})
		if err != nil {
			return nil, fmt.Errorf("model client: %w", err)
		}
		model = client
	}
	tracer, err := tracing.New(ctx, tracing.Config{
		Endpoint: cfg.Tracing.Endpoint, TracesEndpoint: cfg.Tracing.TracesEndpoint, Content: cfg.Tracing.Content,
		Version: version, Provider: providerName(cfg.OpenAIBaseURL, demo), Model: name, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	model = tracer.Model(model)
	var indexer repos.Indexer
	if cfg.Index {
		opts := index.Options{Logger: log}
		if cfg.DataDir != "" {
			// The text a build writes before mapping it goes on the
			// disk the saved index goes to, not a /tmp that may be RAM.
			opts.TempDir = filepath.Join(cfg.DataDir, "index")
		}
		indexer = index.Indexer{Options: opts, CheckOnLoad: !oneCall}
	}
	m, err := repos.New(ctx, specs, repos.Options{
		DataDir:    cfg.DataDir,
		SyncEvery:  cfg.RepoSync,
		Logger:     log,
		Env:        env,
		KnownHosts: cfg.KnownHosts,
		OnSync:     onSync,
		Indexer:    indexer,
		OneShot:    oneCall,
	})
	if err != nil {
		_ = tracer.Shutdown(ctx)
		return nil, fmt.Errorf("repositories: %w", err)
	}
	tokens := cfg.Budget
	if tokens == 0 {
		tokens = budget.DefaultBudget(name)
	}
	c := &core{repos: m, model: model, name: name, demo: demo, cfg: cfg, log: log, cal: &budget.Calibrator{}, budget: tokens, tracer: tracer}
	if len(cfg.MCPServers) > 0 {
		c.mcp = mcp.NewClients(cfg.MCPServers, mcp.ClientOptions{
			Env: env, StartTimeout: cfg.ToolTimeout, Version: cmp.Or(version, "devel"), Logger: log,
		})
	}
	return c, nil
}

// toolbox is the tools over one lease, tools.Default: its checkout, and
// its commit's code index once ready; then the tools of the MCP servers
// offered in channel; each call traced when tracing is on. They are the
// same, in the same order, for every repository, so the tool definitions
// sent with each request stay byte-identical and the provider's prompt
// cache holds across turns, threads and repositories.
func (c *core) toolbox(ctx context.Context, l *repos.Lease, channel string) agent.Toolbox {
	reg := tools.NewRegistry(tools.Default(l.Workspace, tools.Options{Index: l.Index})...)
	if c.mcp == nil {
		return c.tracer.Tools(reg)
	}
	return c.tracer.Tools(mcp.NewToolbox(reg, c.mcp.Tools(ctx, channel), tools.RegistryOptions{Logger: c.log}))
}

// toolServers is what /healthz shows of the MCP servers; nil without any.
func (c *core) toolServers() func() any {
	if c.mcp == nil {
		return nil
	}
	return func() any { return c.mcp.Health() }
}

// clock dates the context a thread's first question carries to the model;
// tests stop it, to compare what two front ends send byte for byte.
var clock = time.Now

// newRunner builds the turn runner over store: the same one runs the
// terminal's turns and Slack's, so both send the model the same bytes for
// the same history.
func (c *core) newRunner(store runnerStore) (*turn.Runner, error) {
	var quota turn.Quota
	if c.cfg.Budgets.Set() {
		quota = usage.NewGate(c.cfg.Budgets, store, clock)
	}
	return turn.New(turn.Config{
		Store: store,
		Agent: agent.Config{
			Model:       c.model,
			MaxSteps:    c.cfg.MaxSteps,
			ToolTimeout: c.cfg.ToolTimeout,
			Compact:     c.cal.Compactor(c.name, c.budget),
			Logger:      cmp.Or(c.agentLog, c.log),
		},
		Tools:      c.toolbox,
		Budget:     c.budget,
		Calibrator: c.cal,
		Model:      c.name,
		Now:        clock,
		Quota:      quota,
	})
}

// runnerStore is the store a runner turns over: its turns, and the sums
// of their usage that the budgets are checked against.
type runnerStore interface {
	turn.Store
	session.UsageTotals
}

// missingRepo is the error for a single checkout that is not there.
func missingRepo(path string) error {
	return fmt.Errorf("repository %q does not exist: pass --repo DIR or set REPO_PATH to a checkout", path)
}

// providerName is gen_ai.provider.name for the API at baseURL: the
// conventions' name of a well-known provider, "openai" for the API every
// other server here speaks.
func providerName(baseURL string, demo bool) string {
	if demo {
		return "askrepo.demo"
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return "openai"
	}
	host := u.Hostname()
	switch {
	case strings.HasSuffix(host, "deepseek.com"):
		return "deepseek"
	case strings.HasSuffix(host, "openai.azure.com"):
		return "azure.ai.openai"
	case strings.HasSuffix(host, "x.ai"):
		return "x_ai"
	case strings.HasSuffix(host, "groq.com"):
		return "groq"
	case strings.HasSuffix(host, "mistral.ai"):
		return "mistral_ai"
	}
	return "openai"
}
