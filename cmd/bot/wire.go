package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/budget"
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/logging"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/askrepo/askrepo/internal/turn"
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
}

func (c *core) Close() error { return c.repos.Close() }

// newCore opens the repositories (REPO_PATH, or the repos of BOT_CONFIG,
// cloning url repos into BOT_DATA_DIR) and the model client. env looks up
// the variables token_env and ssh_key_env name, as the settings were;
// pathOnly uses REPO_PATH alone even when BOT_CONFIG lists repos (--repo);
// onSync, when set, hears of every fetch; oneCall is for a process that
// runs one tool call (bot tool), which checks of a saved code index only
// what the call reads (see index.Indexer.CheckOnLoad).
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
	var indexer repos.Indexer
	if cfg.Index {
		indexer = index.Indexer{Options: index.Options{Logger: log}, CheckOnLoad: !oneCall}
	}
	m, err := repos.New(ctx, specs, repos.Options{
		DataDir:    cfg.DataDir,
		SyncEvery:  cfg.RepoSync,
		Logger:     log,
		Env:        env,
		KnownHosts: cfg.KnownHosts,
		OnSync:     onSync,
		Indexer:    indexer,
	})
	if err != nil {
		return nil, fmt.Errorf("repositories: %w", err)
	}
	tokens := cfg.Budget
	if tokens == 0 {
		tokens = budget.DefaultBudget(name)
	}
	return &core{repos: m, model: model, name: name, demo: demo, cfg: cfg, log: log, cal: &budget.Calibrator{}, budget: tokens}, nil
}

// toolbox is the tools over one lease, tools.Default: its checkout, and
// its commit's code index once ready. They are the same, in the same
// order, for every repository, so the tool definitions sent with each
// request stay byte-identical and the provider's prompt cache holds
// across turns, threads and repositories.
func toolbox(l *repos.Lease) agent.Toolbox {
	return tools.NewRegistry(tools.Default(l.Workspace, tools.Options{Index: l.Index})...)
}

// clock dates the context a thread's first question carries to the model;
// tests stop it, to compare what two front ends send byte for byte.
var clock = time.Now

// newRunner builds the turn runner over store: the same one runs the
// terminal's turns and Slack's, so both send the model the same bytes for
// the same history.
func (c *core) newRunner(store turn.Store) (*turn.Runner, error) {
	return turn.New(turn.Config{
		Store: store,
		Agent: agent.Config{
			Model:       c.model,
			MaxSteps:    c.cfg.MaxSteps,
			ToolTimeout: c.cfg.ToolTimeout,
			Compact:     c.cal.Compactor(c.name, c.budget),
			Logger:      cmp.Or(c.agentLog, c.log),
		},
		Tools:      toolbox,
		Budget:     c.budget,
		Calibrator: c.cal,
		Model:      c.name,
		Now:        clock,
	})
}

// missingRepo is the error for a single checkout that is not there.
func missingRepo(path string) error {
	return fmt.Errorf("repository %q does not exist: pass --repo DIR or set REPO_PATH to a checkout", path)
}
