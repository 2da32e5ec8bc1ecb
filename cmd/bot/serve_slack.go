package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot"
)

// serveSlack wires the checkout, the model, the store and the Slack app
// together and serves until ctx is cancelled (SIGTERM, Ctrl-C), then drains.
func serveSlack(ctx context.Context, cfg config.Config, stderr io.Writer) error {
	log := newLogger(cfg, stderr)
	c, err := newCore(cfg, log)
	if err != nil {
		return err
	}
	defer c.Close()
	if c.demo {
		log.Warn("OPENAI_API_KEY is not set: answering with the demo model, which only lists the repo and reads its README")
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()

	bot, err := slackbot.New(slackbot.Config{
		BotToken:      cfg.SlackBotToken.Reveal(),
		AppToken:      cfg.SlackAppToken.Reveal(),
		APIURL:        cfg.SlackAPIURL,
		Answerer:      c.agent,
		Store:         store,
		RepoName:      cfg.ResolvedRepoName(),
		Commit:        func(ctx context.Context) (string, error) { return headCommit(ctx, c.ws.Dir()) },
		Recovery:      cfg.Recovery,
		ContextBudget: c.budget,
		Model:         c.model,
		Calibrator:    c.cal,
		Followups:     cfg.Followups,
		MaxConcurrent: cfg.Concurrency,
		AllowChannels: cfg.AllowChannel,
		AllowUsers:    cfg.AllowUsers,
		TurnTimeout:   cfg.TurnTimeout,
		DrainTimeout:  cfg.DrainTimeout,
		Logger:        log.With("component", "slack"),
	})
	if err != nil {
		return err
	}

	retention, stopRetention := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRetention()
	go session.RunRetention(retention, store, time.Hour, cfg.Retention, log.With("component", "retention"))

	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("BOT_HTTP_ADDR %s: %w (choose a free address, or set it empty to disable health and metrics)", cfg.HTTPAddr, err)
		}
		srv := &http.Server{Handler: bot.HTTPHandler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("health and metrics listener stopped", "err", err)
			}
		}()
		defer func() {
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shut)
		}()
		log.Info("health and metrics", "addr", ln.Addr().String())
	}
	log.Info("serving Slack", "repo", cfg.ResolvedRepoName(), "path", c.ws.Dir(), "model", c.model)
	return bot.Run(ctx)
}

// openStore opens the SQLite store under BOT_DATA_DIR, creating the
// directory, so sessions survive restarts.
func openStore(ctx context.Context, cfg config.Config) (session.Store, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("BOT_DATA_DIR %s: %w", cfg.DataDir, err)
	}
	path := filepath.Join(cfg.DataDir, "askrepo.db")
	s, err := session.OpenSQLite(ctx, path, session.SQLiteOptions{})
	if err != nil {
		return nil, fmt.Errorf("open session store %s: %w", path, err)
	}
	return s, nil
}

// headCommit is the checkout's current commit, or an error when it is not a
// git checkout.
func headCommit(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "HEAD")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD in %s: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
