package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/slackbot/render"
	"github.com/slack-go/slack"
)

// chatAPI is the part of *slack.Client the poster needs.
type chatAPI interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
}

var _ chatAPI = (*slack.Client)(nil)

// Pacing defaults, from Slack's published limits: chat.postMessage allows
// "1 message per second per channel" with short bursts, and chat.update is a
// Tier 3 method (50+ per minute).
const (
	DefaultPostInterval   = time.Second
	DefaultUpdateInterval = 1200 * time.Millisecond
	DefaultBurst          = 3

	// defaultRetryAfter is the wait after a rate-limit answer that does not
	// say how long to wait (a 429 without Retry-After, or ok:false with
	// error "ratelimited"). Slack normally sends the header; slack-go's own
	// retry uses 60 s here, which would stall a thread for too long.
	defaultRetryAfter = 30 * time.Second
)

// PosterOptions configure a Poster. The zero value is usable.
type PosterOptions struct {
	Logger  *slog.Logger
	OnError func(method string, err error) // a call failed for good (metrics)
	On429   func(method string)            // Slack asked us to slow down (metrics)

	// PostInterval and UpdateInterval are the average gaps between
	// chat.postMessage and chat.update calls to one channel, and Burst how
	// many may go at once after a quiet spell. Zero means the defaults above.
	PostInterval, UpdateInterval time.Duration
	Burst                        int
}

// Poster sends every message and update of the bot, keeping to Slack's rate
// limits:
//
//   - Calls are paced per channel by a small token bucket, one for posts and
//     one for updates.
//   - A rate-limit answer (HTTP 429, *slack.RateLimitedError) means Slack did
//     not act on the call, so the poster waits Retry-After (honouring ctx) and
//     sends it again, pausing the channel's other calls of the same method
//     too: a tool line or an answer is never dropped for being too fast.
//   - A failed chat.postMessage (5xx, network) is never retried: Slack may have
//     posted it, and it has no idempotency key, so a retry could post twice.
//   - chat.update is idempotent, so one such failure is retried once.
//   - Updates to one message are sent one at a time, in order; when several
//     are waiting, only the latest is sent and the ones it replaced return
//     nil, since Slack would show only the last anyway.
//
// A Poster is safe for concurrent use.
type Poster struct {
	api          chatAPI
	log          *slog.Logger
	onError      func(string, error)
	on429        func(string)
	postEvery    time.Duration
	updateEvery  time.Duration
	burst        int
	noRetryAfter time.Duration // wait for rate limits that do not say; a field so tests can shorten it

	mu      sync.Mutex
	posts   map[string]*bucket // by channel
	updates map[string]*bucket // by channel
	msgs    map[msgKey]*msgState
}

// NewPoster returns a Poster that sends through api (a *slack.Client).
func NewPoster(api chatAPI, opts PosterOptions) *Poster {
	p := &Poster{
		api:          api,
		log:          opts.Logger,
		onError:      opts.OnError,
		on429:        opts.On429,
		postEvery:    orDefaultDuration(opts.PostInterval, DefaultPostInterval),
		updateEvery:  orDefaultDuration(opts.UpdateInterval, DefaultUpdateInterval),
		burst:        DefaultBurst,
		noRetryAfter: defaultRetryAfter,
		posts:        map[string]*bucket{},
		updates:      map[string]*bucket{},
		msgs:         map[msgKey]*msgState{},
	}
	if opts.Burst > 0 {
		p.burst = opts.Burst
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.log = p.log.With("component", "slack_poster")
	return p
}

func orDefaultDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Post posts m to channel, as a reply in the thread threadTS when that is
// set, and returns the new message's ts. Link and media previews are off:
// answers often link files, and a preview per link would bury the thread.
func (p *Poster) Post(ctx context.Context, channel, threadTS string, m render.Outgoing) (string, error) {
	const method = "chat.postMessage"
	opts := []slack.MsgOption{
		slack.MsgOptionText(m.Text, false),
		slack.MsgOptionDisableLinkUnfurl(),
		slack.MsgOptionDisableMediaUnfurl(),
	}
	if len(m.Blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(m.Blocks...))
	}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	b := p.bucket(p.posts, channel, p.postEvery)
	for {
		if err := b.wait(ctx); err != nil {
			return "", fmt.Errorf("%s to %s: %w", method, channel, err)
		}
		_, ts, err := p.api.PostMessageContext(ctx, channel, opts...)
		if err == nil {
			return ts, nil
		}
		if wait, ok := p.rateLimited(err); ok {
			p.throttled(method, channel, wait, b)
			continue
		}
		return "", p.failed(method, channel, err)
	}
}

// Update replaces the content of the message ts in channel with m. An empty
// m.Blocks removes the message's blocks.
func (p *Poster) Update(ctx context.Context, channel, ts string, m render.Outgoing) error {
	key := msgKey{channel, ts}
	p.mu.Lock()
	st := p.msgs[key]
	if st == nil {
		st = &msgState{send: make(chan struct{}, 1)}
		p.msgs[key] = st
	}
	st.refs++
	st.seq++
	mine := st.seq
	st.latest = m
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if st.refs--; st.refs == 0 {
			delete(p.msgs, key)
		}
		p.mu.Unlock()
	}()

	select {
	case st.send <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("chat.update of %s in %s: %w", ts, channel, ctx.Err())
	}
	defer func() { <-st.send }()

	p.mu.Lock()
	if st.sent >= mine {
		p.mu.Unlock()
		return nil // a later version was sent while this one waited
	}
	latest, seq := st.latest, st.seq
	p.mu.Unlock()

	if err := p.update(ctx, channel, ts, latest); err != nil {
		return err
	}
	p.mu.Lock()
	st.sent = seq
	p.mu.Unlock()
	return nil
}

func (p *Poster) update(ctx context.Context, channel, ts string, m render.Outgoing) error {
	const method = "chat.update"
	opts := []slack.MsgOption{
		slack.MsgOptionText(m.Text, false),
		slack.MsgOptionBlocks(m.Blocks...),
	}
	b := p.bucket(p.updates, channel, p.updateEvery)
	retried := false
	for {
		if err := b.wait(ctx); err != nil {
			return fmt.Errorf("%s of %s in %s: %w", method, ts, channel, err)
		}
		_, _, _, err := p.api.UpdateMessageContext(ctx, channel, ts, opts...)
		if err == nil {
			return nil
		}
		if wait, ok := p.rateLimited(err); ok {
			p.throttled(method, channel, wait, b)
			continue
		}
		if !retried && ctx.Err() == nil && transient(err) {
			retried = true
			p.log.Warn("slack call failed, retrying once", "method", method, "channel", channel, "err", err)
			continue
		}
		return p.failed(method, channel, err)
	}
}

// msgKey names one Slack message.
type msgKey struct{ channel, ts string }

// msgState orders and coalesces the updates of one message.
type msgState struct {
	send   chan struct{} // holding its one slot is the right to send
	refs   int           // Update calls in progress for the message
	seq    uint64        // version of latest
	sent   uint64        // latest version Slack has
	latest render.Outgoing
}

// rateLimited reports whether err is Slack asking us to slow down, and for
// how long. slack-go v0.35 reports a 429 with Retry-After as
// *slack.RateLimitedError, a 429 without it as slack.StatusCodeError, and
// ok:false "ratelimited" as slack.SlackErrorResponse.
func (p *Poster) rateLimited(err error) (time.Duration, bool) {
	if rl, ok := errors.AsType[*slack.RateLimitedError](err); ok {
		return rl.RetryAfter, true
	}
	if sc, ok := errors.AsType[slack.StatusCodeError](err); ok && sc.Code == 429 {
		return p.noRetryAfter, true
	}
	if se, ok := errors.AsType[slack.SlackErrorResponse](err); ok && se.Err == "ratelimited" {
		return p.noRetryAfter, true
	}
	return 0, false
}

func (p *Poster) throttled(method, channel string, wait time.Duration, b *bucket) {
	p.log.Warn("slack rate limit, waiting", "method", method, "channel", channel, "retry_after", wait)
	if p.on429 != nil {
		p.on429(method)
	}
	b.pause(wait)
}

func (p *Poster) failed(method, channel string, err error) error {
	p.log.Warn("slack call failed", "method", method, "channel", channel, "err", err)
	if p.onError != nil {
		p.onError(method, err)
	}
	return fmt.Errorf("%s to %s: %w", method, channel, err)
}

// transient reports whether err may pass if the same call is sent again: a
// server error or a network failure. Slack's own "ok":false answers are
// final (message_not_found, msg_too_long, invalid_blocks).
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if sc, ok := errors.AsType[slack.StatusCodeError](err); ok {
		return sc.Code >= 500
	}
	_, ok := errors.AsType[net.Error](err)
	return ok
}

// bucket returns the token bucket of channel in m, creating it on first use.
// Full, unpaused buckets are dropped now and then: they behave exactly like
// new ones, and the bot may see many channels over its life.
func (p *Poster) bucket(m map[string]*bucket, channel string, every time.Duration) *bucket {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := m[channel]; b != nil {
		return b
	}
	if len(m) >= 256 {
		now := time.Now()
		for c, b := range m {
			if b.idle(now) {
				delete(m, c)
			}
		}
	}
	b := &bucket{every: every, burst: float64(p.burst), tokens: float64(p.burst), last: time.Now()}
	m[channel] = b
	return b
}

// bucket is a token bucket: burst tokens, one more every interval, and a
// pause that holds every caller back after Slack said to wait.
type bucket struct {
	mu          sync.Mutex
	every       time.Duration
	burst       float64
	tokens      float64 // negative when callers have reserved future tokens
	last        time.Time
	pausedUntil time.Time
}

// wait takes a token, sleeping until it is due or ctx ends.
func (b *bucket) wait(ctx context.Context) error {
	b.mu.Lock()
	now := time.Now()
	b.refill(now)
	b.tokens--
	var delay time.Duration
	if b.tokens < 0 {
		delay = time.Duration(-b.tokens * float64(b.every))
	}
	delay = max(delay, b.pausedUntil.Sub(now))
	b.mu.Unlock()
	if delay <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		b.tokens = min(b.tokens+1, b.burst) // hand the unused token back
		b.mu.Unlock()
		return ctx.Err()
	}
}

// pause holds every caller until d from now.
func (b *bucket) pause(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := time.Now().Add(d); until.After(b.pausedUntil) {
		b.pausedUntil = until
	}
}

func (b *bucket) refill(now time.Time) {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(b.burst, b.tokens+float64(elapsed)/float64(b.every))
		b.last = now
	}
}

func (b *bucket) idle(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(now)
	return b.tokens >= b.burst && !now.Before(b.pausedUntil)
}
