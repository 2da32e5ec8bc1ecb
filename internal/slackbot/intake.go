package slackbot

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack/slackevents"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// The intake: from an event recorded and acked by the read loop (see
// events.go) to its thread's queue, or a sentence that says why not.

// queuedEvent is a message the filters let through, acked and waiting
// for the intake.
type queuedEvent struct {
	in  inbound
	typ string // the event type, for logs
	// key is the event's record in the store's inbox (see receive), which
	// is marked handled once the event is handed on; "" when the store
	// could not record it, and the event lives only here.
	key   string
	retry int // retry_attempt: a redelivery is processed (it may be the only copy) and deduped
	// claimed marks an event recorded by a process that died before
	// handing it on: its turn may exist already.
	claimed bool
}

// intakeLoop turns acked events into queued turns, one at a time and in
// arrival order, so a thread's messages keep their order. Its store calls
// (session lookups, thread queues) are why it is not part of readLoop.
func (b *Bot) intakeLoop(ctx context.Context) {
	for {
		qe, ok := b.intake.pop(ctx)
		if !ok {
			return
		}
		b.admit(ctx, qe)
	}
}

// receiveTimeout bounds the store write that records an event before its
// ack, well inside the 3 s Slack gives the ack; the write takes a few
// milliseconds on SQLite or PostgreSQL.
const receiveTimeout = time.Second

// receive filters an Events API event and records the message it carries
// in the store's inbox, under a key that is its dedupe key: the message's
// channel and ts, which Slack's redeliveries (same event_id) and the same
// message delivered as both app_mention and message share, on any
// replica. It reports whether the event goes on to the intake.
//
// If the store cannot record it, the event is answered from memory (and
// counted): a crash before it is handed on then loses it, and a rare
// double answer is better than a silent drop. It is acked either way: an
// unacked envelope is redelivered, to a store that may still be down.
func (b *Bot) receive(ctx context.Context, ea slackevents.EventsAPIEvent, retry int) (queuedEvent, bool) {
	team := ea.TeamID
	var eventID string
	if cb, ok := ea.Data.(*slackevents.EventsAPICallbackEvent); ok {
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
	switch ev := ea.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		in, why = fromMention(team, eventID, ev, b.self)
	case *slackevents.MessageEvent:
		in, why = fromMessage(team, eventID, ev, b.self)
	case *slackevents.AssistantThreadStartedEvent:
		return b.onPanel(ctx, team, eventID, ev.AssistantThread, true)
	case *slackevents.AssistantThreadContextChangedEvent:
		return b.onPanel(ctx, team, eventID, ev.AssistantThread, false)
	case *slackevents.AppHomeOpenedEvent:
		return b.onHome(team, ev)
	case *slackevents.AgentSessionStoppedEvent:
		b.sessionStopped(team, ev)
		return queuedEvent{}, false
	default:
		why = ignoreOther
	}
	if why != "" {
		b.ignore(why, ea.InnerEvent.Type, eventID, retry)
		return queuedEvent{}, false
	}
	b.inPanel(&in)
	return b.record(ctx, in, inboxKey(in), ea.InnerEvent.Type, retry)
}

// record puts in into the store's inbox under key, before its envelope is
// acked, and reports whether it goes on to the intake: not when the key
// was recorded before (a redelivery). See receive.
func (b *Bot) record(ctx context.Context, in inbound, key, typ string, retry int) (queuedEvent, bool) {
	qe := queuedEvent{in: in, typ: typ, retry: retry}
	data, err := json.Marshal(in)
	if err != nil {
		b.log.Error("encode an event for the store; answering it from memory", "event_id", in.EventID, "err", err)
		b.metrics.unrecorded.Inc()
		return qe, true
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), receiveTimeout)
	defer cancel()
	first, err := b.cfg.Store.Receive(rctx, key, data, b.owner, b.hold, b.cfg.DedupeTTL)
	switch {
	case err != nil:
		b.metrics.unrecorded.Inc()
		b.log.Error("record an event before acking it; answering it from memory, a crash before it is handed on loses it",
			"event_id", in.EventID, "thread", in.Key.String(), "err", err)
		return qe, true
	case !first:
		b.ignore(ignoreDup, typ, in.EventID, retry)
		return queuedEvent{}, false
	}
	qe.key = key
	return qe, true
}

// inboxKey is a message's key in the inbox and its dedupe key.
func inboxKey(in inbound) string {
	return "msg:" + in.Key.Team + ":" + in.Key.Channel + ":" + in.TS
}

func (b *Bot) ignore(why, typ, eventID string, retry int) {
	b.metrics.ignored.WithLabelValues(why).Inc()
	b.log.Debug("event not answered", "reason", why, "type", typ, "event_id", eventID, "retry_attempt", retry)
}

// handled marks an event of the inbox handed on. A failure costs a second
// look at it at the next start or claim, which finds its turn and drops it.
func (b *Bot) handled(key string) {
	if key == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), admitTimeout)
	defer cancel()
	if err := b.cfg.Store.Handled(ctx, key); err != nil {
		b.log.Warn("mark an event handled; it is looked at again after a restart", "key", key, "err", err)
	}
}

// claimReceived queues the events a process recorded (and acked) but did
// not hand on before it died: at start, this data's previous run; with
// replicas, periodically, any replica whose hold on them has passed. They
// go through the intake like new events, in the order they arrived.
func (b *Bot) claimReceived(ctx context.Context) {
	rs, err := b.cfg.Store.ClaimReceived(ctx, b.owner, b.hold)
	if err != nil {
		b.log.Error("look for events a stopped process received and did not answer; trying again later", "err", err)
		return
	}
	for _, r := range rs {
		var in inbound
		if err := json.Unmarshal(r.Data, &in); err != nil {
			b.log.Error("a received event does not decode; dropped", "key", r.Key, "err", err)
			b.handled(r.Key)
			continue
		}
		b.log.Info("answering an event a stopped process received", "thread", in.Key.String(), "ts", in.TS, "received", r.Received)
		b.intake.push(queuedEvent{in: in, key: r.Key, claimed: true})
	}
}

// admitTimeout bounds the store calls that admit one event.
const admitTimeout = 5 * time.Second

// admit decides whether a received event becomes a turn and queues it.
// Its store calls do not follow ctx's cancellation: at shutdown the intake
// still admits what Slack already delivered (and was acked), so a
// follow-up is found to belong to its thread and reaches the queue, which
// tells the thread it will be answered after the restart (the inbox keeps
// it for the next start) or, with replicas, keeps it in the store for
// another replica. admitTimeout bounds each event instead.
//
// The event's inbox record is marked handled once it is handed on: to the
// store's thread queue (replicas), or to a started turn (one process; see
// runTurn), or dropped here.
func (b *Bot) admit(ctx context.Context, qe queuedEvent) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), admitTimeout)
	defer cancel()
	in := qe.in
	if in.Pending {
		b.postPending(qe)
		return
	}
	b.recallPanel(ctx, &in)
	var why string
	if in.FollowUp {
		switch {
		case b.cfg.Followups == FollowupsMention:
			why = ignorePolicy
		case !b.hasSession(ctx, in):
			why = ignoreNoThread
		}
	}
	if why == "" && qe.claimed && b.rep == nil {
		// The process that recorded it may have started its turn, which
		// recoverTurns has queued already.
		if _, err := b.cfg.Store.Turn(ctx, messageTurnID(in)); err == nil {
			why = ignoreDup
		}
	}
	if why != "" {
		b.ignore(why, qe.typ, in.EventID, qe.retry)
		b.handled(qe.key)
		return
	}
	switch {
	case !b.allowed(in), !b.repoEnabled(in):
		b.refuse(ctx, in)
		b.handled(qe.key)
	case strings.TrimSpace(in.Text) == "":
		b.background(func(ctx context.Context) {
			b.postNote(ctx, in, "Ask me a question about the repository after the mention, for example where something is implemented.")
		})
		b.handled(qe.key)
	default:
		b.enqueue(ctx, in, qe.key)
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
	// Whether it exists is all this asks: the history is the turn's to
	// read, once.
	_, ok, err := b.cfg.Store.SessionInfo(ctx, in.Key)
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
	if _, err := b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, render.Outgoing{Text: text}); err != nil {
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
