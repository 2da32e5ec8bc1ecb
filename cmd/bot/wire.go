package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
)

// demoNotice is printed when no API key is set, so nobody mistakes the demo
// model's answers for a real model's.
const demoNotice = "Using the demo model (OPENAI_API_KEY is not set): it lists the repo and reads its README, nothing more.\n" +
	"For real answers set OPENAI_API_KEY (and OPENAI_BASE_URL/OPENAI_MODEL for other providers) in .env or the environment.\n"

// newLogger builds the one logger everything narrows with .With.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// terminalLogger keeps the terminal for the conversation: only warnings
// and errors, as text, unless debug logging was asked for (-v).
func terminalLogger(cfg config.Config, w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if cfg.LogLevel == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// core is what both the terminal and Slack need: the checkout, its tools,
// the model and the loop over them.
type core struct {
	ws    *tools.Workspace
	agent *agent.Agent
	model string
	demo  bool
	// cal learns the model's tokens per estimated token; the agent's
	// in-turn guard and Slack's compaction between turns share it and
	// budget.
	cal    *session.Calibrator
	budget int
}

func (c *core) Close() error { return c.ws.Close() }

func newCore(cfg config.Config, log *slog.Logger) (*core, error) {
	ws, err := tools.NewWorkspace(cfg.RepoPath, tools.WorkspaceOptions{Deny: cfg.RepoDeny, Logger: log.With("component", "workspace")})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("repository %q does not exist: pass --repo DIR or set REPO_PATH to a checkout", cfg.RepoPath)
		}
		return nil, fmt.Errorf("repository %q: %w (pass --repo DIR or set REPO_PATH)", cfg.RepoPath, err)
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
			Logger:         log.With("component", "llm"),
		})
		if err != nil {
			ws.Close()
			return nil, fmt.Errorf("model client: %w", err)
		}
		model = client
	}
	reg := tools.NewRegistry(
		tools.NewListFiles(ws),
		tools.NewReadFile(ws),
		tools.NewSearchCode(ws, tools.SearchCodeOptions{}),
		tools.NewGlob(ws),
		tools.NewGitLog(ws, tools.GitOptions{}),
		tools.NewGitShow(ws, tools.GitOptions{}),
		tools.NewGitBlame(ws, tools.GitOptions{}),
	)
	cal := &session.Calibrator{}
	budget := cfg.Budget
	if budget == 0 {
		budget = session.DefaultBudget(name)
	}
	a, err := agent.New(agent.Config{
		Model:       model,
		Tools:       reg,
		MaxSteps:    cfg.MaxSteps,
		ToolTimeout: cfg.ToolTimeout,
		Compact:     cal.Compactor(name, budget),
		Logger:      log.With("component", "agent"),
	})
	if err != nil {
		ws.Close()
		return nil, err
	}
	return &core{ws: ws, agent: a, model: name, demo: demo, cal: cal, budget: budget}, nil
}

// isTerminal reports whether f is a character device, so colours and
// prompts are used only where a person is looking.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
