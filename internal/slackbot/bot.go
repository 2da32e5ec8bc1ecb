package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/budget"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
)

// Answerer runs one turn of the agent over one checkout (see
// Config.NewAnswerer). *agent.Agent satisfies it; tests plug the real agent
// over a fake model server.
type Answerer interface {
	Run(ctx context.Context, history []llm.Message, user llm.Message, obs agent.Observer) (agent.Turn, error)
}

var _ Answerer = (*agent.Agent)(nil)

// Resumer finishes a turn cut off by a restart from its persisted history
// (see agent.Agent.Resume). An Answerer that does not implement it is run
// on the turn's question again instead.
type Resumer interface {
	Resume(ctx context.Context, history []llm.Message, obs agent.Observer) (agent.Turn, error)
}

// prefixer reports what every request sends before the history (see
// agent.Agent.Prefix), so the size of a request is estimated with it.
type prefixer interface {
	Prefix() (system llm.Message, tools []llm.ToolSpec)
}

var (
	_ Resumer  = (*agent.Agent)(nil)
	_ prefixer = (*agent.Agent)(nil)
)

// Recovery policies for turns a restart cut off (Config.Recovery).
const (
	// RecoverResume continues the turn from its last persisted step.
	RecoverResume = "resume"
	// RecoverRerun answers the question again from the start.
	RecoverRerun = "rerun"
	// RecoverReport only tells the thread to ask again.
	RecoverReport = "report"
)

// Follow-up policies for messages in a thread that already has a session.
const (
	// FollowupsAll answers every human message in such a thread.
	FollowupsAll = "all"
	// FollowupsMention answers only messages that mention the bot again.
	FollowupsMention = "mention"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxConcurrent    = 4
	DefaultTurnTimeout      = 10 * time.Minute
	DefaultDrainTimeout     = 30 * time.Second
	DefaultDedupeTTL        = 2 * time.Hour
	DefaultProgressInterval = 1200 * time.Millisecond
	DefaultAckTimeout       = 2 * time.Second
)

// Repos is what the bot needs of the repositories (*repos.Manager): which
// ones a channel may read, which one a question is about, and a checkout of
// it that stays at one commit for a whole turn.
type Repos interface {
	ForChannel(channel string) []string
	Resolve(channel, text string) (repo, question string, err error)
	Acquire(ctx context.Context, name string) (*repos.Lease, error)
	Health() []repos.RepoHealth
}

var _ Repos = (*repos.Manager)(nil)

// Config is everything the bot needs. Tokens, Store, Repos and NewAnswerer
// are required; every other zero value means the default named next to it.
type Config struct {
	// BotToken (xoxb-) authorises Web API calls.
	BotToken string
	// AppToken (xapp-, scope connections:write) opens Socket Mode connections.
	AppToken string
	// APIURL is the Web API base URL; empty means Slack's. Slack-compatible
	// test servers and proxies are reached through it. A missing trailing
	// slash is added, because slack-go appends method names verbatim.
	APIURL string
	// HTTPClient is used for Web API calls; nil means http.DefaultClient.
	HTTPClient *http.Client

	// Store keeps sessions, turns and dedupe keys.
	Store session.Store

	// Shared, when set, makes this process one of several replicas over
	// one store (see replicas): questions go through the store's thread
	// queues, one replica at a time holds a thread under a lease of
	// LeaseTTL (default DefaultLeaseTTL), and turns of a replica that
	// died are resumed by another. Replica names this process in the
	// leases (default DefaultReplicaID). Unset, one process answers
	// alone: its threads are ordered in memory, and a start recovers the
	// turns the last run cut off and answers the questions it acked but
	// did not start.
	Shared   Shared
	Replica  string
	LeaseTTL time.Duration

	// Repos binds each thread to one repository (the channel's default,
	// or the one the question names: "in payments: …") and gives each
	// turn a lease on it, one commit from start to end; a channel that may
	// read none is told the bot is not enabled there. The repository's
	// name and that commit go to the model in a session's first message
	// and to the footer; the answer's citations are checked and linked at
	// the commit, and context lines link the files the tools read.
	// NewAnswerer builds the agent over a lease's workspace for each turn;
	// it must give every repository the same tools in the same order, so
	// the prompt cache holds across turns and threads.
	Repos       Repos
	NewAnswerer func(ws *tools.Workspace) (Answerer, error)

	// Recovery is what happens at start to turns that a crash or a
	// shutdown cut off: RecoverResume (default), RecoverRerun or
	// RecoverReport. Either way the thread is told in one sentence.
	Recovery string
	// ContextBudget is the most prompt tokens a thread's history may take
	// before it is compacted, once, between turns (budget.Compact);
	// 0 turns compaction off. Model names the model for the Calibrator,
	// which learns from the prompt tokens each step reports how far the
	// byte-based estimate is off; nil means one of the bot's own.
	ContextBudget int
	Model         string
	Calibrator    *budget.Calibrator

	// Followups is FollowupsAll (default) or FollowupsMention.
	Followups string
	// MaxConcurrent bounds turns running at once across threads (default
	// DefaultMaxConcurrent); the rest wait in order, visibly queued.
	MaxConcurrent int
	// AllowChannels and AllowUsers, when not empty, are the only channel and
	// user IDs the bot answers. The channel list does not apply to DMs; the
	// user list applies everywhere.
	AllowChannels []string
	AllowUsers    []string

	// TurnTimeout cuts a turn that runs longer (default DefaultTurnTimeout).
	TurnTimeout time.Duration
	// DrainTimeout is how long running turns may go on after Run's context
	// is cancelled before they are cut (default DefaultDrainTimeout).
	DrainTimeout time.Duration
	// DedupeTTL is how long event and message keys are remembered; Slack's
	// last redelivery comes about 5 minutes after the first attempt
	// (default DefaultDedupeTTL).
	DedupeTTL time.Duration
	// ProgressInterval is the least time between two edits of a progress
	// message; chat.update allows about 50 a minute per workspace (default
	// DefaultProgressInterval).
	ProgressInterval time.Duration
	// PostInterval, UpdateInterval and PostBurst pace chat.postMessage and
	// chat.update per channel (see PosterOptions); zero means the poster's
	// defaults, taken from Slack's published limits.
	PostInterval, UpdateInterval time.Duration
	PostBurst                    int
	// AckTimeout bounds the wait for a slot in slack-go's ack queue, which
	// fills only while the socket is down (default DefaultAckTimeout).
	AckTimeout time.Duration
	// PingInterval is how long the socket may go without a ping from Slack
	// before it is recycled; zero means slack-go's default (30s).
	PingInterval time.Duration

	// CrashAt, for tests of crash recovery only, is called at the points
	// named by the Crash* constants; the test binary kills itself there.
	// nil (always, outside such tests) does nothing.
	CrashAt func(point string)

	// Logger receives one JSON-friendly line per turn and the errors behind
	// every reference shown in Slack; nil discards.
	Logger *slog.Logger
	// Registry receives the bot's metrics; nil means a registry of its own.
	// HTTPHandler serves whichever it is.
	Registry *prometheus.Registry
}

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

	// statusOff is set once assistant.threads.setStatus is refused for a
	// reason that will not change (scope, method unknown), to stop asking.
	statusOff atomic.Bool

	rep *replicas // nil unless Config.Shared is set

	// owner names this process in the store's inbox, and hold is how long
	// an event it received stays its own before another process may
	// claim it: the lease TTL with replicas; zero alone, since only the
	// next start claims, before it reads anything.
	owner string
	hold  time.Duration

	bg sync.WaitGroup // short background posts (refusals, hints)

	// system and tools are what every request sends before the history,
	// from the Answerer when it reports them; for estimates. They are
	// taken from the first turn's Answerer (the same for every
	// repository): prefixOnce guards the write, and every turn passes
	// through it before reading them.
	system     llm.Message
	tools      []llm.ToolSpec
	prefixOnce sync.Once
}

// identity is who the bot is, from auth.test.
type identity struct {
	UserID string
	BotID  string
	TeamID string
}

// New checks cfg and builds a Bot. It makes no network call; Run does.
func New(cfg Config) (*Bot, error) {
	var errs []error
	switch {
	case cfg.BotToken == "":
		errs = append(errs, errors.New("the bot token (xoxb-…) is missing"))
	case !strings.HasPrefix(cfg.BotToken, "xoxb-"):
		errs = append(errs, errors.New("the bot token must start with xoxb- (Slack app → OAuth & Permissions → Bot User OAuth Token)"))
	}
	switch {
	case cfg.AppToken == "":
		errs = append(errs, errors.New("the app-level token (xapp-…) is missing; Socket Mode needs it"))
	case !strings.HasPrefix(cfg.AppToken, "xapp-"):
		errs = append(errs, errors.New(appTokenShape(cfg.AppToken)))
	}
	if cfg.Repos == nil {
		errs = append(errs, errors.New("no Repos: the bot has no repository to answer about"))
	}
	if cfg.NewAnswerer == nil {
		errs = append(errs, errors.New("no NewAnswerer: the bot cannot build an agent over a checkout"))
	}
	if cfg.Store == nil {
		errs = append(errs, errors.New("no session Store"))
	}
	switch cfg.Followups {
	case "":
		cfg.Followups = FollowupsAll
	case FollowupsAll, FollowupsMention:
	default:
		errs = append(errs, fmt.Errorf("follow-up policy %q is unknown; use %q or %q", cfg.Followups, FollowupsAll, FollowupsMention))
	}
	switch cfg.Recovery {
	case "":
		cfg.Recovery = RecoverResume
	case RecoverResume, RecoverRerun, RecoverReport:
	default:
		errs = append(errs, fmt.Errorf("recovery policy %q is unknown; use %q, %q or %q", cfg.Recovery, RecoverResume, RecoverRerun, RecoverReport))
	}
	if cfg.ContextBudget < 0 {
		errs = append(errs, errors.New("the context budget must not be negative (0 turns compaction off)"))
	}
	if cfg.MaxConcurrent < 0 || cfg.TurnTimeout < 0 || cfg.DrainTimeout < 0 || cfg.DedupeTTL < 0 || cfg.ProgressInterval < 0 || cfg.AckTimeout < 0 || cfg.PingInterval < 0 ||
		cfg.PostInterval < 0 || cfg.UpdateInterval < 0 || cfg.PostBurst < 0 {
		errs = append(errs, errors.New("limits and durations must not be negative"))
	}
	if cfg.LeaseTTL != 0 && cfg.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("lease TTL %s is too short: renewals go every third of it and must not lose a race with the store's latency; use 1s or more", cfg.LeaseTTL))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("slack bot config: %w", err)
	}
	cfg.MaxConcurrent = orDefault(cfg.MaxConcurrent, DefaultMaxConcurrent)
	cfg.TurnTimeout = orDefault(cfg.TurnTimeout, DefaultTurnTimeout)
	cfg.DrainTimeout = orDefault(cfg.DrainTimeout, DefaultDrainTimeout)
	cfg.DedupeTTL = orDefault(cfg.DedupeTTL, DefaultDedupeTTL)
	cfg.ProgressInterval = orDefault(cfg.ProgressInterval, DefaultProgressInterval)
	cfg.AckTimeout = orDefault(cfg.AckTimeout, DefaultAckTimeout)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Calibrator == nil {
		cfg.Calibrator = &budget.Calibrator{}
	}

	opts := []slack.Option{slack.OptionAppLevelToken(cfg.AppToken)}
	if cfg.APIURL != "" {
		u := cfg.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, slack.OptionAPIURL(u))
	}
	opts = append(opts, slack.OptionHTTPClient(shownURLClient{orDefault(cfg.HTTPClient, http.DefaultClient)}))

	log := cfg.Logger.With("component", "slackbot")
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("register slack bot metrics: %w", err)
	}
	b := &Bot{
		cfg:     cfg,
		log:     log,
		api:     slack.New(cfg.BotToken, opts...),
		metrics: m,
		allowCh: set(cfg.AllowChannels),
		allowU:  set(cfg.AllowUsers),
		intake:  newFIFO[queuedEvent](),
		running: make(map[string]*runningTurn),
	}
	b.poster = NewPoster(b.api, PosterOptions{
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
	b.cfg.Replica = orDefault(cfg.Replica, DefaultReplicaID())
	b.owner = b.cfg.Replica
	if cfg.Shared != nil {
		b.cfg.LeaseTTL = orDefault(cfg.LeaseTTL, DefaultLeaseTTL)
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
	b.self = identity{UserID: auth.UserID, BotID: auth.BotID, TeamID: auth.TeamID}

	// slack-go retries apps.connections.open forever on errors such as
	// not_allowed_token_type (a bot token passed as the app token), so one
	// first call of our own turns them into a clear failure at start.
	if _, _, err := b.api.StartSocketModeContext(ctx); err != nil {
		return b.startError("apps.connections.open", "open a Socket Mode connection with the app-level token", err,
			"it must be an xapp- token with the connections:write scope, and Socket Mode must be enabled for the app")
	}
	// Only now, with both tokens accepted, is the bot serving.
	b.log.Info("serving Slack", "team", auth.Team, "team_id", auth.TeamID, "bot_user", auth.UserID, "model", b.cfg.Model)

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
