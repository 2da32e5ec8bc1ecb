package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// queuedEvent is an acked Events API envelope waiting for the intake.
type queuedEvent struct {
	api   slackevents.EventsAPIEvent
	retry int // retry_attempt: a redelivery is processed (it may be the only copy) and deduped
}

// readLoop drains slack-go's Events channel. It never blocks on anything but
// the ack queue (bounded by AckTimeout): a slow reader stalls slack-go's
// socket reader, which then misses pings and recycles the connection.
func (b *Bot) readLoop(ctx context.Context, sm *socketmode.Client, fatal chan<- error) {
	for {
		select {
		case <-ctx.Done():
			return
		case evt := <-sm.Events:
			b.onEvent(ctx, sm, evt, fatal)
		}
	}
}

func (b *Bot) onEvent(ctx context.Context, sm *socketmode.Client, evt socketmode.Event, fatal chan<- error) {
	received := time.Now()
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		b.setConnected(false)
	case socketmode.EventTypeConnected, socketmode.EventTypeHello:
		b.setConnected(true)
	case socketmode.EventTypeConnectionError:
		b.setConnected(false)
		var cause error
		if ce, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
			cause = ce.ErrorObj
		}
		if permanentConnError(cause) {
			select {
			case fatal <- errors.Join(errors.New("apps.connections.open keeps refusing the app-level token"), cause):
			default:
			}
			return
		}
		b.log.Warn("socket mode connection failed; slack-go retries with backoff", "err", cause)
	case socketmode.EventTypeInvalidAuth:
		select {
		case fatal <- errors.New("slack reports invalid auth for the app-level token"):
		default:
		}
	case socketmode.EventTypeIncomingError:
		// Also emitted on every reconnect (a read on the closed socket).
		b.log.Debug("socket read error", "err", dataErr(evt.Data))
	case socketmode.EventTypeErrorWriteFailed:
		b.log.Warn("socket write failed; Slack will redeliver what was not acked", "err", dataErr(evt.Data))
	case socketmode.EventTypeErrorBadMessage:
		// slack-go could not parse this envelope (an unknown inner event
		// type, a block it rejects) and gives no Request to ack, so nobody
		// acks it unless we dig the envelope id out of the raw frame; Slack
		// would redeliver it three more times.
		bm, _ := evt.Data.(*socketmode.ErrorBadMessage)
		if bm == nil {
			return
		}
		id := envelopeID(bm.Message)
		b.log.Warn("unparseable socket mode envelope acked and skipped", "envelope_id", id, "err", bm.Cause)
		if id != "" {
			b.ack(ctx, sm, id, received)
		}
	case socketmode.EventTypeEventsAPI:
		if evt.Request != nil {
			b.ack(ctx, sm, evt.Request.EnvelopeID, received)
		}
		ea, ok := evt.Data.(slackevents.EventsAPIEvent)
		if !ok {
			return
		}
		qe := queuedEvent{api: ea}
		if evt.Request != nil {
			qe.retry = evt.Request.RetryAttempt
		}
		b.intake.push(qe)
	case socketmode.EventTypeInteractive:
		if evt.Request != nil {
			b.ack(ctx, sm, evt.Request.EnvelopeID, received)
		}
		if cb, ok := evt.Data.(slack.InteractionCallback); ok {
			b.onInteraction(cb)
		}
	default:
		// Slash commands and anything newer: ack so Slack does not retry.
		if evt.Request != nil && evt.Request.EnvelopeID != "" {
			b.ack(ctx, sm, evt.Request.EnvelopeID, received)
		}
	}
}

func (b *Bot) ack(ctx context.Context, sm *socketmode.Client, envelopeID string, received time.Time) {
	actx, cancel := context.WithTimeout(ctx, b.cfg.AckTimeout)
	defer cancel()
	if err := sm.AckCtx(actx, envelopeID, nil); err != nil {
		b.metrics.ackFailures.Inc()
		b.log.Warn("ack not queued; Slack will redeliver the envelope", "envelope_id", envelopeID, "err", err)
		return
	}
	b.metrics.ackSeconds.Observe(time.Since(received).Seconds())
}

func (b *Bot) setConnected(up bool) {
	if b.connected.Swap(up) != up {
		b.log.Info("socket mode connection", "connected", up)
	}
	if up {
		b.metrics.connected.Set(1)
	} else {
		b.metrics.connected.Set(0)
	}
}

// permanentConnError tells apart apps.connections.open errors that retrying
// cannot fix (slack-go would retry them forever) from network trouble.
func permanentConnError(err error) bool {
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) {
		return false
	}
	switch se.Err {
	case "not_allowed_token_type", "invalid_auth", "not_authed", "token_revoked",
		"account_inactive", "missing_scope", "team_access_not_granted", "token_expired":
		return true
	}
	return false
}

func envelopeID(raw json.RawMessage) string {
	var f struct {
		EnvelopeID string `json:"envelope_id"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return ""
	}
	return f.EnvelopeID
}

func dataErr(data any) error {
	switch d := data.(type) {
	case *slack.IncomingEventError:
		return d.ErrorObj
	case *socketmode.ErrorWriteFailed:
		return d.Cause
	case error:
		return d
	}
	return nil
}

// onInteraction handles the Stop button. It only cancels: the turn itself
// says in the thread who stopped it, once it has wound down. With replicas,
// Slack may deliver the click to one not running the turn: that one records
// it in the store, where the running one finds it within a second.
func (b *Bot) onInteraction(cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions {
		return
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a == nil || a.ActionID != stopActionID {
			continue
		}
		b.mu.Lock()
		rt := b.running[a.Value]
		b.mu.Unlock()
		switch {
		case rt == nil && b.rep != nil:
			b.rep.requestStop(a.Value, cb.User.ID)
			continue
		case rt == nil:
			b.log.Debug("stop clicked for a turn that is not running", "turn", a.Value, "user", cb.User.ID)
			continue
		}
		rt.stop(cb.User.ID)
	}
}

// intakeLoop turns acked events into queued turns, one at a time and in
// arrival order, so a thread's messages keep their order. Its store calls
// (dedupe, session lookups) are why it is not part of readLoop.
func (b *Bot) intakeLoop(ctx context.Context) {
	for {
		qe, ok := b.intake.pop(ctx)
		if !ok {
			return
		}
		b.admit(ctx, qe)
	}
}

// admitTimeout bounds the store calls that admit one event.
const admitTimeout = 5 * time.Second

// admit decides whether an acked event becomes a turn and queues it. Its
// store calls do not follow ctx's cancellation: at shutdown the intake
// still admits what Slack already delivered (and was acked), so a
// follow-up is found to belong to its thread and reaches the queue, which
// tells the thread to ask again or, with replicas, keeps it in the store
// for another replica. admitTimeout bounds each event instead.
func (b *Bot) admit(ctx context.Context, qe queuedEvent) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), admitTimeout)
	defer cancel()
	team := qe.api.TeamID
	var eventID string
	if cb, ok := qe.api.Data.(*slackevents.EventsAPICallbackEvent); ok {
		eventID = cb.EventID
		if team == "" {
			team = cb.TeamID
		}
	}
	if team == "" {
		team = b.self.TeamID
	}
	var (
		in  inbound
		why string
	)
	switch ev := qe.api.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		in, why = fromMention(team, eventID, ev, b.self)
	case *slackevents.MessageEvent:
		in, why = fromMessage(team, eventID, ev, b.self)
	default:
		why = ignoreOther
	}
	if why == "" && in.FollowUp {
		switch {
		case b.cfg.Followups == FollowupsMention:
			why = ignorePolicy
		case !b.hasSession(ctx, in):
			why = ignoreNoThread
		}
	}
	if why == "" && !b.firstSeen(ctx, in) {
		why = ignoreDup
	}
	if why != "" {
		b.metrics.ignored.WithLabelValues(why).Inc()
		b.log.Debug("event not answered", "reason", why, "type", qe.api.InnerEvent.Type, "event_id", eventID, "retry_attempt", qe.retry)
		return
	}
	switch {
	case !b.allowed(in), !b.repoEnabled(in):
		b.refuse(ctx, in)
	case strings.TrimSpace(in.Text) == "":
		b.background(func(ctx context.Context) {
			b.postNote(ctx, in, "Ask me a question about the repository after the mention, for example where something is implemented.")
		})
	default:
		b.enqueue(ctx, in)
	}
}

// hasSession reports whether a thread is one the bot takes part in: a turn
// of it is queued or running here, or the store has its session. With
// replicas, also a thread whose first question waits or runs on another
// replica and has stored no turn yet: its queue or lease is in the store.
func (b *Bot) hasSession(ctx context.Context, in inbound) bool {
	if b.queue.known(in.Key) || (b.rep != nil && b.rep.known(in.Key)) {
		return true
	}
	_, ok, err := b.cfg.Store.Session(ctx, in.Key)
	if err != nil {
		b.log.Error("look up a thread's session", "thread", in.Key.String(), "err", err)
		return false
	}
	if ok || b.rep == nil {
		return ok
	}
	busy, err := b.rep.store.ThreadBusy(ctx, in.Key)
	if err != nil {
		b.log.Error("look for another replica's work on a thread", "thread", in.Key.String(), "err", err)
		return false
	}
	return busy
}

// firstSeen dedupes Slack's redeliveries (same event_id) and the same
// message delivered as both app_mention and message (same channel and ts).
// If the store fails, the message is answered: a rare double answer is
// better than a silent drop.
func (b *Bot) firstSeen(ctx context.Context, in inbound) bool {
	keys := []string{"msg:" + in.Key.Team + ":" + in.Key.Channel + ":" + in.TS}
	if in.EventID != "" {
		keys = append([]string{"event:" + in.EventID}, keys...)
	}
	for _, k := range keys {
		first, err := b.cfg.Store.FirstSeen(ctx, k, b.cfg.DedupeTTL)
		if err != nil {
			b.log.Error("dedupe check failed; answering anyway", "key", k, "err", err)
			continue
		}
		if !first {
			return false
		}
	}
	return true
}

// refuse says once per thread that the bot is not enabled here (by the
// allow-lists, or no repository serves the channel), and reads nothing
// from any repository.
func (b *Bot) refuse(ctx context.Context, in inbound) {
	b.metrics.refused.Inc()
	first, err := b.cfg.Store.FirstSeen(ctx, "refused:"+in.Key.String(), b.cfg.DedupeTTL)
	if err != nil {
		b.log.Error("dedupe a refusal", "thread", in.Key.String(), "err", err)
	}
	b.log.Info("question refused: not enabled for this channel or user", "thread", in.Key.String(), "user", in.User, "first", first)
	if !first && err == nil {
		return
	}
	b.background(func(ctx context.Context) {
		b.postNote(ctx, in, "Sorry, I am not enabled here.")
	})
}

// background runs a short post off the intake goroutine; Run waits for it.
// The post outlives Run's cancel and the drain's cut of the turns (it is
// what tells a thread that its question will not be answered), but not the
// final grace after the cut (see Bot.slackCtx).
func (b *Bot) background(f func(ctx context.Context)) {
	b.bg.Go(func() {
		ctx, cancel := context.WithTimeout(b.slackCtx, 30*time.Second)
		defer cancel()
		f(ctx)
	})
}

func (b *Bot) postNote(ctx context.Context, in inbound, text string) {
	if _, err := b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, Outgoing{Text: text}); err != nil {
		b.log.Error("post a note", "thread", in.Key.String(), "err", err)
	}
}

// fifo is an unbounded queue: push never blocks, so the read loop never
// waits on the intake. Slack caps delivery at 30,000 events an hour.
type fifo[T any] struct {
	mu    sync.Mutex
	items []T
	ready chan struct{}
}

func newFIFO[T any]() *fifo[T] { return &fifo[T]{ready: make(chan struct{}, 1)} }

func (f *fifo[T]) push(v T) {
	f.mu.Lock()
	f.items = append(f.items, v)
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

func (f *fifo[T]) pop(ctx context.Context) (T, bool) {
	for {
		f.mu.Lock()
		if len(f.items) > 0 {
			v := f.items[0]
			var zero T
			f.items[0] = zero
			f.items = f.items[1:]
			f.mu.Unlock()
			return v, true
		}
		f.mu.Unlock()
		select {
		case <-f.ready:
		case <-ctx.Done():
			var zero T
			return zero, false
		}
	}
}

func (f *fifo[T]) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.items)
}
