package slacktest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// Defaults used when no Option overrides them.
const (
	DefaultBotToken  = "xoxb-test-bot-token"
	DefaultAppToken  = "xapp-test-app-token"
	DefaultTeamID    = "T1"
	DefaultTeamName  = "askrepo-test"
	DefaultBotUserID = "UBOT"
	DefaultBotID     = "BBOT"
	DefaultBotName   = "askrepo"
	DefaultAppID     = "A1"

	// DefaultPingInterval is how often the fake sends WebSocket PINGs. slack-go drops
	// a connection that saw no PING within its OptionPingInterval (30 s by default);
	// keep the client's interval at 1 s or more in tests so scheduling noise under
	// -race never trips it.
	DefaultPingInterval = 100 * time.Millisecond

	// firstTS is the first message timestamp the fake hands out.
	firstTS = int64(1_700_000_000_000_100)
	tsStep  = int64(100)
)

// Config is the fake workspace's identity and socket behaviour.
type Config struct {
	BotToken  string
	AppToken  string
	TeamID    string
	TeamName  string
	BotUserID string
	BotID     string
	BotName   string
	AppID     string
	// PingInterval is the WebSocket PING period; negative disables pings, which lets
	// a test exercise slack-go's ping watchdog.
	PingInterval time.Duration
	// Channels maps channel IDs to names for conversations.info.
	Channels map[string]string
	// Users maps user IDs to names for users.info.
	Users map[string]string
	// EchoBotPosts makes every successful chat.postMessage come back as a message
	// event, as Slack does for an app subscribed to message.channels or message.im.
	EchoBotPosts bool
	// StreamMaxAge is how long a streamed message takes appends
	// (DefaultStreamMaxAge when 0).
	StreamMaxAge time.Duration
	Logger       *slog.Logger
}

// Option changes the Config of a new Server.
type Option func(*Config)

// WithTokens sets the bot (xoxb-) and app-level (xapp-) tokens the fake accepts.
func WithTokens(bot, app string) Option {
	return func(c *Config) { c.BotToken, c.AppToken = bot, app }
}

// WithBotUser sets what auth.test reports as the bot's user ID, bot ID and name.
func WithBotUser(userID, botID, name string) Option {
	return func(c *Config) { c.BotUserID, c.BotID, c.BotName = userID, botID, name }
}

// WithTeam sets the workspace ID and name.
func WithTeam(id, name string) Option {
	return func(c *Config) { c.TeamID, c.TeamName = id, name }
}

// WithAppID sets the app ID reported in hello frames and envelopes.
func WithAppID(id string) Option {
	return func(c *Config) { c.AppID = id }
}

// WithPingInterval sets the PING period; d < 0 disables pings.
func WithPingInterval(d time.Duration) Option {
	return func(c *Config) { c.PingInterval = d }
}

// WithChannel names a channel for conversations.info.
func WithChannel(id, name string) Option {
	return func(c *Config) {
		if c.Channels == nil {
			c.Channels = map[string]string{}
		}
		c.Channels[id] = name
	}
}

// WithUser names a user for users.info.
func WithUser(id, name string) Option {
	return func(c *Config) {
		if c.Users == nil {
			c.Users = map[string]string{}
		}
		c.Users[id] = name
	}
}

// WithEchoBotPosts turns on the echo of the bot's own posts as message events
// (see Config.EchoBotPosts). Each echo is an envelope the bot has to ack.
func WithEchoBotPosts() Option {
	return func(c *Config) { c.EchoBotPosts = true }
}

// WithLogger makes the fake log every call and frame at Debug level.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) { c.Logger = l }
}

// Server is the fake Slack. Create it with New and stop it with Close.
type Server struct {
	// URL is the base URL of the server, e.g. "http://127.0.0.1:1234".
	URL string

	cfg Config
	log *slog.Logger
	hs  *httptest.Server

	// sendMu orders socket writes of envelopes: a connection's hello and the flush of
	// pending envelopes happen under it, so no envelope can overtake another.
	sendMu sync.Mutex

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	st       State
	clock    int64
	tickets  map[string]bool
	conns    map[int]*wsConn
	nextConn int
	rr       int
	pending  []*outFrame
	envSeq   int
	eventSeq int
	clickSeq int
	fail     map[string][]Response
	always   map[string]Response
	holds    map[string]*hold
	views    *viewStore // made on first use; see views.go
	viewSeq  int
	closed   bool

	wg sync.WaitGroup
}

// New starts a fake Slack on a loopback port.
func New(opts ...Option) *Server {
	cfg := Config{
		BotToken:     DefaultBotToken,
		AppToken:     DefaultAppToken,
		TeamID:       DefaultTeamID,
		TeamName:     DefaultTeamName,
		BotUserID:    DefaultBotUserID,
		BotID:        DefaultBotID,
		BotName:      DefaultBotName,
		AppID:        DefaultAppID,
		PingInterval: DefaultPingInterval,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		cfg:     cfg,
		log:     log.With("component", "slacktest"),
		changed: make(chan struct{}),
		clock:   firstTS - tsStep,
		tickets: map[string]bool{},
		conns:   map[int]*wsConn{},
		fail:    map[string][]Response{},
		always:  map[string]Response{},
		holds:   map[string]*hold{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.serveAPI)
	mux.HandleFunc("/ws", s.serveSocket)
	mux.HandleFunc("/response/", s.serveResponseURL)
	s.hs = httptest.NewServer(mux)
	s.URL = s.hs.URL
	return s
}

// Config returns the resolved configuration (tokens, IDs, ping interval).
func (s *Server) Config() Config { return s.cfg }

// APIURL is the value for slack.OptionAPIURL; it ends in "/" because slack-go
// appends method names to it verbatim.
func (s *Server) APIURL() string { return s.URL + "/api/" }

// Client returns a slack-go client wired to the fake with both tokens; extra options
// are applied after them.
func (s *Server) Client(extra ...slack.Option) *slack.Client {
	opts := append([]slack.Option{
		slack.OptionAppLevelToken(s.cfg.AppToken),
		slack.OptionAPIURL(s.APIURL()),
	}, extra...)
	return slack.New(s.cfg.BotToken, opts...)
}

// Close closes every Socket Mode connection and shuts the server down. It is safe to
// call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for m, h := range s.holds {
		h.open()
		delete(s.holds, m)
	}
	conns := make([]*wsConn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	s.hs.Close()
}

// NextTS hands out the next message timestamp. Events sent without a ts get one from
// here, and so does every message the bot posts, so all messages of a test are
// strictly ordered.
func (s *Server) NextTS() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextTSLocked()
}

func (s *Server) nextTSLocked() string {
	s.clock += tsStep
	return formatTS(s.clock)
}

// observeTSLocked moves the clock past a timestamp chosen by a test, so later
// generated timestamps never collide with it.
func (s *Server) observeTSLocked(ts string) {
	if m, ok := tsMicros(ts); ok && m > s.clock {
		s.clock = m
	}
}

// notifyLocked wakes every waiter; callers hold s.mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Snapshot returns a copy of everything recorded so far.
func (s *Server) Snapshot() *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.clone()
}

// WaitFor blocks until cond holds for the recorded state or ctx ends. cond runs on a
// fresh snapshot after every change; it must not call methods of s. The error names
// what was recorded, to make a failing test readable.
func (s *Server) WaitFor(ctx context.Context, cond func(*State) bool) (*State, error) {
	for {
		s.mu.Lock()
		snap := s.st.clone()
		ch := s.changed
		s.mu.Unlock()
		if cond(snap) {
			return snap, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return snap, fmt.Errorf("slacktest: condition not met (%s): %w", snap.summary(), ctx.Err())
		}
	}
}

// Calls returns the recorded calls to method ("" for all), in arrival order. Failed
// and injected calls are included: they are what the bot spent against rate limits.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.CallsTo(method)
}

// WaitCalls waits until at least n calls to method were recorded and returns them.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) ([]Call, error) {
	st, err := s.WaitFor(ctx, func(st *State) bool { return len(st.CallsTo(method)) >= n })
	if err != nil {
		return nil, fmt.Errorf("waiting for %d %s calls: %w", n, method, err)
	}
	return st.CallsTo(method), nil
}

// Messages returns every stored message (deleted and ephemeral ones too) in the order
// they were stored.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.clone().Messages
}

// Message finds one message by channel and ts.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.st.clone().Message(channel, ts)
	return m, ok
}

// Thread returns the visible messages of a thread, root first; see State.Thread.
func (s *Server) Thread(channel, rootTS string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.clone().Thread(channel, rootTS)
}

// WaitMessages waits until the bot has posted at least n visible messages in channel
// with the given thread_ts ("" for top-level) and returns all of them in ts order.
// Messages sent by users through SendEvent and ephemeral messages are not counted.
func (s *Server) WaitMessages(ctx context.Context, channel, threadTS string, n int) ([]Message, error) {
	st, err := s.WaitFor(ctx, func(st *State) bool {
		return len(st.BotMessages(channel, threadTS, s.cfg.BotID)) >= n
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %d bot messages in %s thread %q: %w", n, channel, threadTS, err)
	}
	return st.BotMessages(channel, threadTS, s.cfg.BotID), nil
}

// Statuses returns the assistant.threads.setStatus calls that succeeded.
func (s *Server) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.clone().Statuses
}

// Envelopes returns every envelope sent or queued, in order.
func (s *Server) Envelopes() []Envelope {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.clone().Envelopes
}

// Acks returns every frame the clients wrote on their sockets, in arrival order.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.clone().Acks
}

// AckLatencies returns the latency of every ack of a known envelope, in arrival order.
func (s *Server) AckLatencies() []time.Duration {
	var out []time.Duration
	for _, a := range s.Acks() {
		if a.Known {
			out = append(out, a.Latency)
		}
	}
	return out
}

// WaitAck waits for the client to ack envelopeID and returns the ack.
func (s *Server) WaitAck(ctx context.Context, envelopeID string) (Ack, error) {
	st, err := s.WaitFor(ctx, func(st *State) bool { _, ok := st.Ack(envelopeID); return ok })
	if err != nil {
		return Ack{}, fmt.Errorf("waiting for ack of envelope %s: %w", envelopeID, err)
	}
	a, _ := st.Ack(envelopeID)
	return a, nil
}

// Connections counts live Socket Mode connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Live()
}

// WaitConnected waits until exactly n Socket Mode connections are live (and have
// received hello). n == 0 waits for every socket to close.
func (s *Server) WaitConnected(ctx context.Context, n int) error {
	if _, err := s.WaitFor(ctx, func(st *State) bool { return st.Live() == n }); err != nil {
		return fmt.Errorf("waiting for %d live connections: %w", n, err)
	}
	return nil
}

// FailNext makes the next len(resps) calls to method answer with resps, in order,
// before any token check or side effect, as a real rate limiter or outage would.
func (s *Server) FailNext(method string, resps ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[method] = append(s.fail[method], resps...)
}

// FailAlways makes every call to method answer with resp until ClearFailures.
func (s *Server) FailAlways(method string, resp Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always[method] = resp
}

// ClearFailures drops every scripted failure.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.fail)
	clear(s.always)
}

func (s *Server) takeFailureLocked(method string) (Response, bool) {
	if q := s.fail[method]; len(q) > 0 {
		s.fail[method] = q[1:]
		return q[0], true
	}
	r, ok := s.always[method]
	return r, ok
}

func (s *Server) wsURL(ticket string) string {
	return "ws://" + strings.TrimPrefix(s.URL, "http://") + "/ws?ticket=" + ticket
}
