package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tracing"
	"github.com/askrepo/askrepo/internal/turn"
	"github.com/askrepo/askrepo/internal/usage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/slack-go/slack"
)

// Turns runs a thread's turns (*turn.Runner): the one read of the
// thread's session, a new question, and a turn a restart cut off. The bot
// shows what they do and posts what they return.
type Turns interface {
	Load(ctx context.Context, key session.Key) (turn.Loaded, error)
	Run(ctx context.Context, req turn.Request) (turn.Result, error)
	Resume(ctx context.Context, req turn.Request, rerun bool) (turn.Result, error)
	// Admit refuses a new question over a budget (*usage.OverBudget)
	// before anything of it shows.
	Admit(ctx context.Context, key session.Key, user, repo string) error
	// ToolNames are the tools a turn offers, the only tool names metrics
	// are labelled with; ModelName names the model in the log.
	ToolNames() []string
	ModelName() string
}

var _ Turns = (*turn.Runner)(nil)

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

// Config is everything the bot needs. Tokens, Store, Repos and Turns are
// required; every other zero value means the default named next to it.
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
	Repos Repos
	// Turns runs each turn over its lease, on the same Store.
	Turns Turns

	// Recovery is what happens at start to turns that a crash or a
	// shutdown cut off: RecoverResume (default), RecoverRerun or
	// RecoverReport. Either way the thread is told in one sentence.
	Recovery string

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

	// UI is how answers show: UIAuto (default), UIStream or UIMessages.
	// Tasks is how a streamed answer's tool calls show, TasksTimeline
	// (default) or TasksPlan. StreamInterval spaces a stream's appends
	// (default DefaultStreamInterval); StreamFallback is how long a
	// workspace that refused streaming gets messages in auto (default
	// DefaultStreamFallback). AppendsPerMinute paces chat.appendStream
	// across a workspace's streams (default 90, under Tier 4's 100).
	UI               string
	Tasks            string
	StreamInterval   time.Duration
	StreamFallback   time.Duration
	AppendsPerMinute int

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
	// Tracer traces each turn and the Slack calls that post its answer;
	// nil traces nothing.
	Tracer *tracing.Tracer
	// Prices turn the tokens a turn spent into the estimated cost the
	// metrics count (usage.Prices, from BOT_CONFIG); nil counts no cost.
	Prices usage.Prices
	// ToolServers, when set, gives the state of each MCP server whose
	// tools the agent may call, shown as it encodes to JSON under
	// /healthz's "mcp_servers". A server that is down does not make the
	// service unhealthy: the turns go on without it.
	ToolServers func() any
}

// checkConfig names every problem of cfg at once.
func checkConfig(cfg Config) []error {
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
	if cfg.Turns == nil {
		errs = append(errs, errors.New("no Turns: the bot cannot run a turn over a checkout"))
	}
	if cfg.Store == nil {
		errs = append(errs, errors.New("no session Store"))
	}
	switch cfg.Followups {
	case "", FollowupsAll, FollowupsMention:
	default:
		errs = append(errs, fmt.Errorf("follow-up policy %q is unknown; use %q or %q", cfg.Followups, FollowupsAll, FollowupsMention))
	}
	switch cfg.Recovery {
	case "", RecoverResume, RecoverRerun, RecoverReport:
	default:
		errs = append(errs, fmt.Errorf("recovery policy %q is unknown; use %q, %q or %q", cfg.Recovery, RecoverResume, RecoverRerun, RecoverReport))
	}
	switch cfg.UI {
	case "", UIAuto, UIStream, UIMessages:
	default:
		errs = append(errs, fmt.Errorf("Slack UI %q is unknown; use %q, %q or %q", cfg.UI, UIAuto, UIStream, UIMessages))
	}
	switch cfg.Tasks {
	case "", TasksTimeline, TasksPlan:
	default:
		errs = append(errs, fmt.Errorf("task display %q is unknown; use %q or %q", cfg.Tasks, TasksTimeline, TasksPlan))
	}
	if cfg.StreamInterval < 0 || cfg.StreamFallback < 0 || cfg.AppendsPerMinute < 0 {
		errs = append(errs, errors.New("stream intervals must not be negative"))
	}
	if cfg.MaxConcurrent < 0 || cfg.TurnTimeout < 0 || cfg.DrainTimeout < 0 || cfg.DedupeTTL < 0 || cfg.ProgressInterval < 0 || cfg.AckTimeout < 0 || cfg.PingInterval < 0 ||
		cfg.PostInterval < 0 || cfg.UpdateInterval < 0 || cfg.PostBurst < 0 {
		errs = append(errs, errors.New("limits and durations must not be negative"))
	}
	if cfg.LeaseTTL != 0 && cfg.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("lease TTL %s is too short: renewals go every third of it and must not lose a race with the store's latency; use 1s or more", cfg.LeaseTTL))
	}
	return errs
}

// withDefaults fills the zero values of a checked cfg.
func withDefaults(cfg Config) Config {
	cfg.Followups = orDefault(cfg.Followups, FollowupsAll)
	cfg.Recovery = orDefault(cfg.Recovery, RecoverResume)
	cfg.MaxConcurrent = orDefault(cfg.MaxConcurrent, DefaultMaxConcurrent)
	cfg.TurnTimeout = orDefault(cfg.TurnTimeout, DefaultTurnTimeout)
	cfg.DrainTimeout = orDefault(cfg.DrainTimeout, DefaultDrainTimeout)
	cfg.DedupeTTL = orDefault(cfg.DedupeTTL, DefaultDedupeTTL)
	cfg.ProgressInterval = orDefault(cfg.ProgressInterval, DefaultProgressInterval)
	cfg.AckTimeout = orDefault(cfg.AckTimeout, DefaultAckTimeout)
	cfg.UI = orDefault(cfg.UI, UIAuto)
	cfg.Tasks = orDefault(cfg.Tasks, TasksTimeline)
	cfg.StreamInterval = orDefault(cfg.StreamInterval, DefaultStreamInterval)
	cfg.StreamFallback = orDefault(cfg.StreamFallback, DefaultStreamFallback)
	cfg.AppendsPerMinute = orDefault(cfg.AppendsPerMinute, DefaultAppendsPerMinute)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	cfg.Replica = orDefault(cfg.Replica, DefaultReplicaID())
	if cfg.Shared != nil {
		cfg.LeaseTTL = orDefault(cfg.LeaseTTL, DefaultLeaseTTL)
	}
	return cfg
}

// slackOptions are slack-go's options for cfg.
func slackOptions(cfg Config) []slack.Option {
	opts := []slack.Option{slack.OptionAppLevelToken(cfg.AppToken)}
	if cfg.APIURL != "" {
		u := cfg.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, slack.OptionAPIURL(u))
	}
	return append(opts, slack.OptionHTTPClient(shownURLClient{orDefault(cfg.HTTPClient, http.DefaultClient)}))
}
