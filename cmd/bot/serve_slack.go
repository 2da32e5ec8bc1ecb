package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/flock"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot"
)

// serveSlack wires the repositories, the model, the store and the Slack app
// together and serves until ctx is cancelled (SIGTERM, Ctrl-C), then drains.
func serveSlack(ctx context.Context, cfg config.Config, env func(string) (string, bool), stderr io.Writer) error {
	log := newLogger(cfg, stderr)
	s, err := newService(ctx, cfg, env, log)
	if err != nil {
		return stoppedEarly(ctx, log, err)
	}
	defer s.Close()
	return s.run(ctx)
}

// stoppedEarly is err, unless ctx was cancelled meanwhile: a stop while
// starting (a first clone can take minutes, another process may hold the
// data directory, Slack may not have answered yet) took nothing on, so it
// is a clean stop, not a failure for a supervisor to restart.
func stoppedEarly(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	log.Info("stopped before serving", "cause", context.Cause(ctx).Error())
	return nil
}

// service is the Slack side wired together, built by newService and served
// by run; tests build one to reach its repositories.
type service struct {
	cfg   config.Config
	env   func(string) (string, bool)
	log   *slog.Logger
	core  *core
	store session.Store
	bot   *slackbot.Bot
	mcp   *mcp.Server // nil: /mcp is off
}

// newService clones or opens the repositories, opens the store and builds
// the bot. Close it when done.
func newService(ctx context.Context, cfg config.Config, env func(string) (string, bool), log *slog.Logger) (*service, error) {
	reg := prometheus.NewRegistry()
	syncs := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "askrepo", Name: "repo_syncs_total",
		Help: "Fetches of url repositories, by repo and result (ok, error); a failed fetch keeps the last good checkout."}, []string{"repo", "result"})
	reg.MustRegister(syncs)
	onSync := func(name string, err error) {
		result := "ok"
		if err != nil {
			result = "error"
		}
		syncs.WithLabelValues(name, result).Inc()
	}
	c, err := newCore(ctx, cfg, env, false, log, onSync, false)
	if err != nil {
		return nil, err
	}
	if c.demo {
		log.Warn("OPENAI_API_KEY is not set: answering with the demo model, which only lists the repo and reads its README")
	}
	store, err := openStore(ctx, cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	runner, err := c.newRunner(store)
	if err != nil {
		store.Close()
		c.Close()
		return nil, err
	}
	mcpSrv, err := c.openMCP(ctx, store, reg, log)
	if err != nil {
		store.Close()
		c.Close()
		return nil, err
	}
	bot, err := slackbot.New(slackbot.Config{
		BotToken:      cfg.SlackBotToken.Reveal(),
		AppToken:      cfg.SlackAppToken.Reveal(),
		APIURL:        cfg.SlackAPIURL,
		Store:         store,
		Shared:        sharedThreads(store),
		LeaseTTL:      cfg.LeaseTTL,
		Repos:         c.repos,
		Turns:         runner,
		Recovery:      cfg.Recovery,
		Followups:     cfg.Followups,
		UI:            cfg.SlackUI.Mode,
		Tasks:         cfg.SlackUI.Tasks,
		MaxConcurrent: cfg.Concurrency,
		AllowChannels: cfg.AllowChannel,
		AllowUsers:    cfg.AllowUsers,
		TurnTimeout:   cfg.TurnTimeout,
		DrainTimeout:  cfg.DrainTimeout,
		CrashAt:       testCrashAt(env, log),
		Logger:        log,
		Registry:      reg,
		Tracer:        c.tracer,
		Prices:        cfg.Budgets.Prices,
		ToolServers:   c.toolServers(),
	})
	if err != nil {
		store.Close()
		c.Close()
		return nil, err
	}
	return &service{cfg: cfg, env: env, log: log, core: c, store: store, bot: bot, mcp: mcpSrv}, nil
}

// Close closes the store and the repositories; after run has returned.
func (s *service) Close() {
	s.store.Close()
	s.core.Close()
}

// run serves Slack until ctx is cancelled, with the repositories' sync
// loop, the retention sweep and the health and metrics listener beside it.
func (s *service) run(ctx context.Context) error {
	cfg, log := s.cfg, s.log
	// The background loops stop after the bot has drained: a turn still
	// running keeps its lease either way, but a sync during the drain
	// would only be thrown away.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	go session.RunRetention(bg, s.store, time.Hour, cfg.Retention, log)
	synced := make(chan struct{})
	go func() { defer close(synced); s.core.repos.Run(bg) }()
	defer func() { stopBG(); <-synced }()
	if s.core.mcp != nil {
		// Started now, the servers' tools are ready for the first
		// question, and /healthz shows each from the start.
		s.core.mcp.Start()
	}

	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("BOT_HTTP_ADDR %s: %w (choose a free address, or set it empty to disable health and metrics)", cfg.HTTPAddr, err)
		}
		srv := &http.Server{Handler: withMCP(s.bot.HTTPHandler(), s.mcp), ReadHeaderTimeout: 5 * time.Second}
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
	release, err := s.serveAlone(ctx)
	if err != nil {
		return stoppedEarly(ctx, log, err)
	}
	defer release()
	defer s.listenTools(log)()
	// "serving Slack" comes from the bot once Slack accepted the tokens.
	log.Info("connecting to Slack", "repos", s.core.repos.Repos(), "model", s.core.name)
	// Run returns nil once it served and drained; an error with ctx
	// cancelled came from a call to Slack the stop cut.
	return stoppedEarly(ctx, log, s.bot.Run(ctx))
}

// serveLockFile, in BOT_DATA_DIR, is locked by the process serving Slack
// from the SQLite store there.
const serveLockFile = "serve.lock"

// serveAlone makes this the only process serving Slack from a SQLite store:
// it waits (until ctx is done) while another one does, and returns the
// release of its turn. A SQLite file is one replica's, so its turns carry no
// lease: a second process recovering from it would take over turns the
// first is still running, and both would answer. Waiting instead makes a
// start beside a running bot (a rolling restart on one host, a second one
// started by mistake) take over only once the first has drained and
// stopped; a crashed one's lock goes with it, so a restart never waits on
// the dead. PostgreSQL replicas hold each thread under a lease instead, and
// the memory store is this process's alone.
func (s *service) serveAlone(ctx context.Context) (release func(), err error) {
	if _, ok := s.store.(*session.SQLite); !ok {
		return func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(s.cfg.DataDir, serveLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("BOT_DATA_DIR %s: open the serving lock: %w", s.cfg.DataDir, err)
	}
	err = flock.Wait(ctx, f, func() {
		s.log.Warn("another bot serve is serving Slack from this data directory; waiting for it to stop (for several at once, use PostgreSQL: BOT_STORE=postgres://…)", "data_dir", s.cfg.DataDir)
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("BOT_DATA_DIR %s: wait for the serving lock: %w", s.cfg.DataDir, err)
	}
	return func() { f.Close() }, nil
}

// openStore opens the store BOT_STORE names (SQLite under BOT_DATA_DIR by
// default), creating the data directory, so sessions survive restarts.
func openStore(ctx context.Context, cfg config.Config) (session.Backend, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("BOT_DATA_DIR %s: %w", cfg.DataDir, err)
	}
	return session.Open(ctx, cfg.Store.Reveal(), cfg.DataDir, session.Options{})
}

// testCrashAt is for the restart tests only, which kill the real binary at
// the points where a crash must lose nothing: ASKREPO_TEST_CRASH_AT names
// one (slackbot.CrashAfterAck, slackbot.CrashBetweenParts), and the
// process kills itself there with SIGKILL, as a crash would, without a
// word to Slack or a write to the store. Unset, as in every real use, it
// returns nil and the bot does nothing at those points.
func testCrashAt(env func(string) (string, bool), log *slog.Logger) func(string) {
	want, _ := env("ASKREPO_TEST_CRASH_AT")
	if want == "" {
		return nil
	}
	log.Warn("ASKREPO_TEST_CRASH_AT is set: this process kills itself at that point; it is for tests only", "point", want)
	return func(point string) {
		if point != want {
			return
		}
		// slack-go writes an ack to the socket from its own goroutine:
		// a moment lets it get there, as it would before a real crash
		// that came a little later. Nothing else moves meanwhile: the
		// point is on the goroutine that would go on.
		time.Sleep(300 * time.Millisecond)
		log.Warn("killing this process at a test crash point", "point", point)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Kill()
		}
		select {} // the kill is asynchronous; nothing after the point may run
	}
}
