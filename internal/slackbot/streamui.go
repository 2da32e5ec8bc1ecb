package slackbot

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/askrepo/askrepo/internal/session"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// UIs for Config.UI.
const (
	// UIAuto streams where Slack allows it and posts messages elsewhere.
	UIAuto = "auto"
	// UIStream streams every answer; a refused stream still answers, as
	// messages, for that turn.
	UIStream = "stream"
	// UIMessages posts a progress message and then the answer.
	UIMessages = "messages"
)

// Task display modes for Config.Tasks.
const (
	TasksTimeline = "timeline"
	TasksPlan     = "plan"
)

// Defaults for the streamed UI.
const (
	// DefaultStreamInterval spaces a stream's appends: chat.appendStream
	// is a Tier 4 method (100+ a minute per workspace), and one a second
	// keeps even a few answers streaming at once within it.
	DefaultStreamInterval = time.Second
	// DefaultAppendsPerMinute is the pace of chat.appendStream calls
	// across a workspace's streams: under Tier 4's 100 a minute, with room
	// for a retry. More answers at once each append less often, with more
	// text.
	DefaultAppendsPerMinute = 90
	// DefaultStreamFallback is how long a workspace that refused streaming
	// gets messages before streaming is tried there again.
	DefaultStreamFallback = time.Hour
)

// appendPace is the token bucket of each workspace's appends.
type appendPace struct {
	mu sync.Mutex
	by map[string]*bucket
}

func (p *appendPace) bucket(team string, perMinute int) *bucket {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string]*bucket{}
	}
	b := p.by[team]
	if b == nil {
		b = &bucket{every: time.Minute / time.Duration(perMinute), burst: 3, tokens: 3, last: time.Now()}
		p.by[team] = b
	}
	return b
}

// refusals are Slack's answers that say a workspace will not stream (or
// run agent sessions) now, whatever the call carries: retrying each turn
// would only cost a call and a fallback.
var refusals = map[string]bool{
	"unknown_method": true, "method_deprecated": true, "not_allowed_token_type": true,
	"missing_scope": true, "feature_not_enabled": true, "not_allowed": true,
	"not_enabled": true, "team_not_enabled": true, "invalid_channel_type": true,
	"channel_type_not_supported": true, "restricted_action": true,
}

// fallbacks remembers, per workspace, that Slack refused a streaming or an
// agent-session call, until when to stop asking.
type fallbacks struct {
	mu    sync.Mutex
	until map[string]time.Time // "kind/team" →
}

// off reports whether kind is off in team now.
func (f *fallbacks) off(kind, team string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Before(f.until[kind+"/"+team])
}

// refuse turns kind off in team for d; it reports whether it was on, so
// that a refusal is logged once per spell.
func (f *fallbacks) refuse(kind, team string, d time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.until == nil {
		f.until = map[string]time.Time{}
	}
	k := kind + "/" + team
	was := time.Now().Before(f.until[k])
	f.until[k] = time.Now().Add(d)
	return !was
}

// openStream starts the turn's streamed message when the UI streams here:
// nil means the turn shows as messages.
func (t *turnRun) openStream(note string) *stream {
	b, in := t.b, t.in
	if b.cfg.UI == UIMessages || (b.cfg.UI == UIAuto && b.fallbacks.off("stream", in.Key.Team)) {
		return nil
	}
	var parts []string
	if rc := t.j.recovered; rc != nil {
		parts = rc.turn.Parts
	}
	s, err := b.startStream(t.post, t.ctx, in, t.res.id, parts, note, t.log)
	if err == nil {
		return s
	}
	reason := slackCode(err)
	if reason == "" {
		reason = "error"
	}
	b.metrics.streamFallbacks.WithLabelValues(reason).Inc()
	if refusals[reason] && b.cfg.UI == UIAuto {
		if b.fallbacks.refuse("stream", in.Key.Team, b.cfg.StreamFallback) {
			t.log.Warn("Slack refused a streamed answer; answering as messages in this workspace for a while",
				"team", in.Key.Team, "for", b.cfg.StreamFallback, "err", err)
		}
		return nil
	}
	t.log.Warn("start a streamed answer; this turn answers as messages", "err", err)
	return nil
}

// stopControl is how a streamed turn can be stopped: Slack's own control,
// through the thread's agent session marked processing, or where that is
// refused a message with the Stop button, deleted when the turn ends (a
// button streamed into the answer could not be taken out of it again).
type stopControl struct {
	native bool
	ts     string
}

func (t *turnRun) startStopControl() stopControl {
	b, in := t.b, t.in
	if !b.fallbacks.off("session", in.Key.Team) {
		_, err := b.api.SetAgentSessionStatusContext(t.post, slack.AgentSessionSetStatusParameters{
			Status: slack.AgentSessionStatusProcessing, ChannelID: in.Key.Channel, ThreadTS: in.Key.Thread,
			InitiatorUserID: in.User,
		})
		if err == nil {
			return stopControl{native: true}
		}
		if refusals[slackCode(err)] && b.fallbacks.refuse("session", in.Key.Team, b.cfg.StreamFallback) {
			t.log.Info("agent sessions are not available in this workspace; streamed answers carry a Stop button", "team", in.Key.Team, "err", err)
		}
		b.cosmetic("agents.sessions.setStatus", err)
	}
	ts, err := b.poster.Post(t.post, in.Key.Channel, in.Key.Thread, render.StopMessage(stopActionID, t.res.id))
	if err != nil {
		t.log.Error("post the Stop button", "err", err)
	}
	return stopControl{ts: ts}
}

// end takes the control away: the session goes back to active (the
// thread may ask again), the Stop message is deleted.
func (c stopControl) end(t *turnRun) {
	b, in := t.b, t.in
	if c.native {
		_, err := b.api.SetAgentSessionStatusContext(t.post, slack.AgentSessionSetStatusParameters{
			Status: slack.AgentSessionStatusActive, ChannelID: in.Key.Channel, ThreadTS: in.Key.Thread,
		})
		b.cosmetic("agents.sessions.setStatus", err)
	}
	if c.ts != "" {
		_, _, err := b.api.DeleteMessageContext(t.post, in.Key.Channel, c.ts)
		if err != nil {
			t.log.Warn("delete the Stop button", "err", err)
		}
	}
}

// sessionStopped stops the turn running in the thread whose agent session
// a person stopped in Slack, as the Stop button does: here, or through the
// store on the replica running it.
func (b *Bot) sessionStopped(team string, ev *slackevents.AgentSessionStoppedEvent) {
	if b.allowU != nil && !b.allowU[ev.User] {
		b.log.Info("session stop refused: user not enabled", "user", ev.User)
		return
	}
	key := session.Key{Team: team, Channel: ev.Channel, Thread: ev.ThreadTimestamp}
	b.mu.Lock()
	var found *runningTurn
	for _, rt := range b.running {
		if rt.channel == ev.Channel && rt.thread == ev.ThreadTimestamp {
			found = rt
		}
	}
	b.mu.Unlock()
	if found != nil {
		found.stop(ev.User)
		return
	}
	if b.rep == nil {
		b.log.Debug("session stopped with no turn running", "thread", key.String(), "user", ev.User)
		return
	}
	b.background(func(ctx context.Context) {
		turns, err := b.cfg.Store.Unfinished(ctx)
		if err != nil {
			b.log.Error("find the turn of a stopped session; it goes on", "thread", key.String(), "err", err)
			return
		}
		for _, tr := range turns {
			if tr.Key.Channel == key.Channel && tr.Key.Thread == key.Thread && tr.State == session.TurnRunning {
				b.rep.requestStop(tr.ID, ev.User, ev.Channel)
			}
		}
	})
}

// closeStreams closes the streamed messages a cut-off turn left open, so
// that none keeps spinning; ones Slack closed already are skipped.
func (b *Bot) closeStreams(ctx context.Context, in inbound, streams []string, log *slog.Logger) {
	for _, ts := range streams {
		_, _, err := b.api.StopStreamContext(ctx, in.Key.Channel, ts)
		if err != nil && slackCode(err) != errStreamClosed {
			log.Warn("close a streamed message a restart cut off", "ts", ts, "err", err)
		}
	}
}
