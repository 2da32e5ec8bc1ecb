package mcp

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/tools"
)

// ClientOptions configures Clients. Zero values take the defaults.
type ClientOptions struct {
	// Env looks up the variables the servers' env and headers name.
	Env func(string) (string, bool)
	// StartTimeout bounds connecting to a server and listing its tools,
	// and so how long a turn waits for a server that is starting. Default
	// 30s; the service passes BOT_TOOL_TIMEOUT.
	StartTimeout time.Duration
	// PingTimeout bounds the check of a server after one of its calls
	// failed. Default 5s.
	PingTimeout time.Duration
	// MinBackoff and MaxBackoff bound the pause before a server that
	// failed or died is started again: MinBackoff, then twice as long
	// each time it fails again, up to MaxBackoff. Defaults 1s and 1m.
	MinBackoff, MaxBackoff time.Duration
	// Version is askrepo's, told to the servers.
	Version string
	Logger  *slog.Logger
	// Now is the clock of /healthz's times; nil means time.Now.
	Now func() time.Time

	// pause waits out the pause before a restart; nil means time.After.
	// Tests see the pauses through it.
	pause func(time.Duration) <-chan time.Time
	// maxResponse bounds one HTTP response of a server; 0 means
	// maxServerResponse. Tests lower it.
	maxResponse int64
}

func (o *ClientOptions) now() time.Time { return o.Now() }

// Clients are the MCP servers of BOT_CONFIG's mcp_servers, each kept
// connected by a goroutine of its own from the first time it is needed
// (Start, or a turn in a channel it serves) until Close. It is safe for
// concurrent use.
type Clients struct {
	opts    ClientOptions
	servers []*upstream // sorted by name
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// NewClients prepares the servers; none is started yet.
func NewClients(specs []config.MCPServer, opts ClientOptions) *Clients {
	if opts.Env == nil {
		opts.Env = func(string) (string, bool) { return "", false }
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = 5 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(time.Minute, opts.MinBackoff)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Logger = opts.Logger.With("component", "mcp")
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.pause == nil {
		opts.pause = time.After
	}
	if opts.maxResponse <= 0 {
		opts.maxResponse = maxServerResponse
	}
	c := &Clients{opts: opts}
	c.ctx, c.stop = context.WithCancel(context.Background())
	for _, spec := range specs {
		c.servers = append(c.servers, newUpstream(spec, &c.opts))
	}
	slices.SortFunc(c.servers, func(a, b *upstream) int { return strings.Compare(a.spec.Name, b.spec.Name) })
	return c
}

// Start starts every server now rather than at the first turn that needs
// it, so a service's first answers do not wait and /healthz shows them.
func (c *Clients) Start() {
	for _, s := range c.servers {
		c.ensure(s)
	}
}

func (c *Clients) ensure(s *upstream) {
	s.start.Do(func() {
		c.wg.Add(1)
		go s.run(c.ctx, c.wg.Done)
	})
}

// Close stops every server (a stdio one's process is asked to exit, then
// killed) and waits for them.
func (c *Clients) Close() error {
	c.stop()
	c.wg.Wait()
	return nil
}

// Tools are the tools offered to a question asked in channel (a Slack
// channel ID, D… for a direct message, or "" for the terminal): those of
// every server whose channels include it, by server name and then tool
// name. A server not started yet is started, and Tools waits for its
// first attempt to end (bounded by StartTimeout and ctx), so its tools
// are in the turn's first request. A server that is down keeps offering
// the tools it last listed, so the request prefix stays byte-stable;
// their calls say it is unavailable until it is back.
func (c *Clients) Tools(ctx context.Context, channel string) []tools.Tool {
	var wanted []*upstream
	for _, s := range c.servers {
		if s.spec.OffersIn(channel) {
			c.ensure(s)
			wanted = append(wanted, s)
		}
	}
	for _, s := range wanted {
		select {
		case <-s.firstDone:
		case <-ctx.Done():
		}
	}
	var out []tools.Tool
	for _, s := range wanted {
		for _, t := range s.offeredTools() {
			out = append(out, t)
		}
	}
	return out
}

// ServerHealth is one server's state, as /healthz shows it.
type ServerHealth struct {
	Name  string `json:"name"`
	State string `json:"state"` // idle, starting, ready, down
	// Since is when it entered State; Tools how many tools it offers;
	// Restarts how many times it was started again.
	Since    time.Time `json:"since"`
	Tools    int       `json:"tools"`
	Restarts int       `json:"restarts"`
	// Error is the last failure, scrubbed of its credentials; the details
	// are in the log.
	Error string `json:"error,omitempty"`
}

// Health is every server's state, by name.
func (c *Clients) Health() []ServerHealth {
	out := make([]ServerHealth, 0, len(c.servers))
	for _, s := range c.servers {
		s.mu.Lock()
		out = append(out, ServerHealth{Name: s.spec.Name, State: s.state, Since: s.since.UTC().Round(time.Second),
			Tools: len(s.tools), Restarts: s.restarts, Error: s.lastErr})
		s.mu.Unlock()
	}
	return out
}
