package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// Bot serves one Slack app over Socket Mode. Create it with New and call Run
// once; Healthy and HTTPHandler are safe to use concurrently with Run.
type Bot struct {
	cfg     Config
	log     *slog.Logger
	api     *slack.Client
	poster  *Poster
	metrics *metrics
	allowCh map[string]bool
	allowU  map[string]bool

	self      identity // set by Run before any event is read
	connected atomic.Bool
	started   atomic.Bool

	intake *fifo[queuedEvent]
	queue  *dispatcher

	// turnCtx parents every turn; it is not derived from Run's context, so
	// turns outlive the cancel that starts a drain, and is cancelled (with
	// errShutdown) when the drain times out.
	turnCtx    context.Context
	cancelTurn context.CancelCauseFunc

	// slackCtx carries the Slack calls that must outlive a turn's Stop or
	// timeout and Run's cancel (progress edits, the answer, notes): they
	// tell the thread how it ended. The drain cancels it finalGrace after
	// cutting the turns, so a Slack that rate limits or hangs cannot hold
	// the shutdown past DrainTimeout by more than that.
	slackCtx    context.Context
	cancelSlack context.CancelFunc
	finalGrace  time.Duration

	mu      sync.Mutex
	running map[string]*runningTurn // by turn id, for the Stop button

	// fallbacks are the workspaces where streaming or agent sessions
	// were refused, for a while.
	fallbacks fallbacks
	paces     appendPace

	// statusOff is set once assistant.threads.setStatus is refused for a
	// reason that will not change (scope, method unknown), to stop asking.
	statusOff atomic.Bool

	rep *replicas // nil unless Config.Shared is set

	panels panelThreads // open assistant panel threads
	homes  homeThrottle // when each user's Home tab was last published

	// owner names this process in the store's inbox, and hold is how long
	// an event it received stays its own before another process may
	// claim it: the lease TTL with replicas; zero alone, since only the
	// next start claims, before it reads anything.
	owner string
	hold  time.Duration

	bg sync.WaitGroup // short background posts (refusals, hints)
}

// identity is who the bot is, from auth.test.
type identity struct {
	UserID string
	BotID  string
	TeamID string
	URL    string // the workspace's, for links to threads
}

// New checks cfg and builds a Bot. It makes no network call; Run does.
func New(cfg Config) (*Bot, error) {
	if err := errors.Join(checkConfig(cfg)...); err != nil {
		return nil, fmt.Errorf("slack bot config: %w", err)
	}
	cfg = withDefaults(cfg)
	log := cfg.Logger.With("component", "slackbot")
	m, err := newMetrics(cfg.Registry, cfg.Prices)
	if err != nil {
		return nil, fmt.Errorf("register slack bot metrics: %w", err)
	}
	b := &Bot{
		cfg:     cfg,
		log:     log,
		api:     slack.New(cfg.BotToken, slackOptions(cfg)...),
		metrics: m,
		allowCh: set(cfg.AllowChannels),
		allowU:  set(cfg.AllowUsers),
		intake:  newFIFO[queuedEvent](),
		running: make(map[string]*runningTurn),
	}
	b.poster = NewPoster(traceChat(b.api, cfg.Tracer), PosterOptions{
		Logger:  cfg.Logger, // the poster names itself
		OnError: func(method string, _ error) { m.slackErrors.WithLabelValues(method).Inc() },
		On429:   func(method string) { m.slackRateLimited.WithLabelValues(method).Inc() },

		PostInterval:   cfg.PostInterval,
		UpdateInterval: cfg.UpdateInterval,
		Burst:          cfg.PostBurst,
	})
	b.queue = newDispatcher(cfg.MaxConcurrent, m)
	b.queue.run, b.queue.reject, b.queue.queued = b.runTurn, b.reject, b.markQueued
	b.turnCtx, b.cancelTurn = context.WithCancelCause(context.Background())
	b.slackCtx, b.cancelSlack = context.WithCancel(context.Background())
	b.finalGrace = defaultFinalGrace
	b.owner = b.cfg.Replica
	if cfg.Shared != nil {
		b.rep = newReplicas(b, cfg.Shared, b.cfg.Replica, b.cfg.LeaseTTL)
		b.hold = b.cfg.LeaseTTL
	}
	return b, nil
}

// Run checks the tokens, connects, and serves until ctx is cancelled. Before
// it reads the first event it queues the turns a crash or a shutdown cut off
// (see Recovery), each first in its thread's queue, so a new message in
// such a thread waits for the old answer. When ctx is cancelled it stops
// reading events (unacked ones are redelivered by Slack to whoever connects
// next), lets running turns finish within DrainTimeout, cuts the rest and
// marks them interrupted for the next start, tells queued questions that
// the next start answers them (they stay in the store's inbox), and
// returns nil.
//
// Every event is recorded in the store before it is acked (see receive),
// so a process killed at any point leaves nothing acked only in memory,
// unless the store failed to record it (counted as unrecorded).
// It returns an error at once for tokens Slack refuses, and later if the
// connection fails for good.
func (b *Bot) Run(ctx context.Context) error {
	if !b.started.CompareAndSwap(false, true) {
		return errors.New("slack bot: Run may be called only once")
	}
	boot := time.Now()
	auth, err := b.api.AuthTestContext(ctx)
	if err != nil {
		return b.startError("auth.test", "check the bot token", err,
			"is it the Bot User OAuth Token (xoxb-…) of an installed app?")
	}
	b.self = identity{UserID: auth.UserID, BotID: auth.BotID, TeamID: auth.TeamID, URL: auth.URL}

	// slack-go retries apps.connections.open forever on errors such as
	// not_allowed_token_type (a bot token passed as the app token), so one
	// first call of our own turns them into a clear failure at start.
	if _, _, err := b.api.StartSocketModeContext(ctx); err != nil {
		return b.startError("apps.connections.open", "open a Socket Mode connection with the app-level token", err,
			"it must be an xapp- token with the connections:write scope, and Socket Mode must be enabled for the app")
	}
	// Only now, with both tokens accepted, is the bot serving.
	b.log.Info("serving Slack", "team", auth.Team, "team_id", auth.TeamID, "bot_user", auth.UserID, "model", b.cfg.Turns.ModelName())

	if b.rep != nil {
		b.rep.start(ctx) // claims received events too, and keeps claiming
	} else {
		b.recoverTurns(ctx, boot)
		// After the cut-off turns, so that a thread's older turn goes
		// first; before the first new event, so these keep their place.
		b.claimReceived(ctx)
	}

	var smOpts []socketmode.Option
	if b.cfg.PingInterval > 0 {
		smOpts = append(smOpts, socketmode.OptionPingInterval(b.cfg.PingInterval))
	}
	sm := socketmode.New(b.api, smOpts...)

	sockCtx, stopSock := context.WithCancel(ctx)
	defer stopSock()
	fatal := make(chan error, 2)
	var loops sync.WaitGroup
	loops.Go(func() {
		if err := sm.RunContext(sockCtx); err != nil && sockCtx.Err() == nil {
			fatal <- fmt.Errorf("socket mode connection: %w", err)
		}
	})
	loops.Go(func() { b.readLoop(sockCtx, sm, fatal) })
	loops.Go(func() { b.intakeLoop(sockCtx) })

	var runErr error
	select {
	case <-ctx.Done():
		b.log.Info("shutting down: draining running turns", "grace", b.cfg.DrainTimeout)
	case runErr = <-fatal:
		b.log.Error("slack connection failed; shutting down", "err", runErr)
	}
	// No turn begins once shutdown has: a running one that ends while the
	// socket closes must not hand its slot to a queued question.
	b.queue.close()
	stopSock()
	loops.Wait()
	b.connected.Store(false)
	b.metrics.connected.Set(0)
	if n := b.intake.len(); n > 0 {
		b.log.Warn("acked events left unprocessed at shutdown; the next start answers those the store recorded", "count", n)
	}
	b.drain()
	return runErr
}

// defaultFinalGrace is how long the Slack calls of cut turns (their
// progress edits and the note that they will resume) may take after the
// drain cut, and how much longer drain then waits for the turns to record
// their end.
const defaultFinalGrace = 5 * time.Second

// drain lets running turns finish within DrainTimeout, then cuts them. The
// cut turns record where they ended in the store first and then have
// finalGrace for their Slack calls; drain gives up waiting for them
// 2*finalGrace after the cut, so Run returns in bounded time whatever Slack
// or the store do.
func (b *Bot) drain() {
	b.queue.close() // queued turns start no more; they say so in their thread
	done := make(chan struct{})
	go func() { b.queue.wait(); b.bg.Wait(); close(done) }()
	timer := time.NewTimer(b.cfg.DrainTimeout)
	defer timer.Stop()
	select {
	case <-done:
		return
	case <-timer.C:
	}
	b.log.Warn("drain timeout: interrupting running turns", "running", b.queue.runningCount())
	b.cancelTurn(errShutdown)
	stopSlack := time.AfterFunc(b.finalGrace, b.cancelSlack)
	defer stopSlack.Stop()
	giveUp := time.NewTimer(2 * b.finalGrace)
	defer giveUp.Stop()
	select {
	case <-done:
	case <-giveUp.C:
		b.log.Error("turns still running after the drain cut; returning without them", "running", b.queue.runningCount(), "waited", 2*b.finalGrace)
	}
}

// Healthy is nil only while the socket is connected and the store answers.
func (b *Bot) Healthy() error {
	if !b.connected.Load() {
		return errors.New("slack socket mode is not connected")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := b.cfg.Store.Ping(ctx); err != nil {
		// /healthz answers anyone who can reach the port, and a driver's
		// error can name the database's user and host: the cause goes to
		// the log, the probe gets a sentence.
		b.log.Warn("health check: the session store does not answer", "err", err)
		return errors.New("the session store does not answer (the log has the cause)")
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func set(ids []string) map[string]bool {
	if len(ids) == 0 {
		return nil
	}
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			m[id] = true
		}
	}
	return m
}

// Points at which Config.CrashAt is called.
const (
	// CrashAfterAck is right after an event was recorded and acked, before
	// the intake saw it: it is in the store only.
	CrashAfterAck = "after-ack"
	// CrashBetweenParts is after a part of a multi-part answer was posted
	// and recorded, before the next one.
	CrashBetweenParts = "between-parts"
)

func (b *Bot) crashAt(point string) {
	if b.cfg.CrashAt != nil {
		b.cfg.CrashAt(point)
	}
}
