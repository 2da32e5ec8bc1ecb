package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// readLoop drains slack-go's Events channel. It never blocks on anything but
// the store's record of an event (bounded by receiveTimeout) and the ack
// queue (bounded by AckTimeout): a slow reader stalls slack-go's socket
// reader, which then misses pings and recycles the connection.
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
		b.ackBadMessage(ctx, sm, evt, received)
	case socketmode.EventTypeEventsAPI:
		// Recorded before the ack: Slack does not redeliver an acked
		// event, so from the ack on the store is its only copy.
		var (
			qe   queuedEvent
			keep bool
		)
		if ea, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
			retry := 0
			if evt.Request != nil {
				retry = evt.Request.RetryAttempt
			}
			qe, keep = b.receive(ctx, ea, retry)
		}
		if evt.Request != nil {
			b.ack(ctx, sm, evt.Request.EnvelopeID, received)
		}
		if keep {
			b.crashAt(CrashAfterAck)
			b.intake.push(qe)
		}
	case socketmode.EventTypeInteractive:
		if b.onShortcut(ctx, sm, evt, received) {
			return
		}
		if evt.Request != nil {
			b.ack(ctx, sm, evt.Request.EnvelopeID, received)
		}
		if cb, ok := evt.Data.(slack.InteractionCallback); ok {
			b.onInteraction(cb)
		}
	case socketmode.EventTypeSlashCommand:
		b.onCommand(ctx, sm, evt, received)
	default:
		// Anything newer: ack so Slack does not retry.
		if evt.Request != nil && evt.Request.EnvelopeID != "" {
			b.ack(ctx, sm, evt.Request.EnvelopeID, received)
		}
	}
}

// ackBadMessage acks an envelope slack-go could not parse.
func (b *Bot) ackBadMessage(ctx context.Context, sm *socketmode.Client, evt socketmode.Event, received time.Time) {
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
}

func (b *Bot) ack(ctx context.Context, sm *socketmode.Client, envelopeID string, received time.Time) {
	b.ackWith(ctx, sm, envelopeID, received, nil)
}

// ackWith acks an envelope with a response payload: for a slash command,
// a reply only the asker sees.
func (b *Bot) ackWith(ctx context.Context, sm *socketmode.Client, envelopeID string, received time.Time, payload any) {
	actx, cancel := context.WithTimeout(ctx, b.cfg.AckTimeout)
	defer cancel()
	if err := sm.AckCtx(actx, envelopeID, payload); err != nil {
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
	if b.onFeedback(cb) {
		return
	}
	if cb.Type != slack.InteractionTypeBlockActions {
		return
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a == nil || a.ActionID != stopActionID {
			continue
		}
		// Stopping is acting on the bot: one who may not ask may not
		// stop either.
		if b.allowU != nil && !b.allowU[cb.User.ID] {
			b.log.Info("stop click refused: user not enabled", "turn", a.Value, "user", cb.User.ID)
			continue
		}
		b.mu.Lock()
		rt := b.running[a.Value]
		b.mu.Unlock()
		switch {
		case rt != nil && rt.channel != clickChannel(cb):
			b.log.Warn("stop click refused: it came from another channel than the turn's", "turn", a.Value, "user", cb.User.ID, "channel", clickChannel(cb))
			continue
		case rt == nil && b.rep != nil:
			b.rep.requestStop(a.Value, cb.User.ID, clickChannel(cb))
			continue
		case rt == nil:
			b.log.Debug("stop clicked for a turn that is not running", "turn", a.Value, "user", cb.User.ID)
			continue
		}
		rt.stop(cb.User.ID)
	}
}

// clickChannel is the channel of the message whose button was clicked.
func clickChannel(cb slack.InteractionCallback) string {
	if cb.Channel.ID != "" {
		return cb.Channel.ID
	}
	return cb.Container.ChannelID
}
