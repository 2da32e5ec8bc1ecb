package slackbot

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// Feedback under an answer: Slack's 👍/👎 buttons (render.Feedback) go under
// the last message of every answer. A click is stored with the turn it
// names, whichever replica Slack delivers it to, since the store is
// shared; a 👎 also opens a modal asking what was wrong, and its
// submission is stored with the rating. Nothing a person types there is
// ever posted back to Slack: it is read with `bot feedback`, escaped.

// triggerWindow is how long after a click Slack accepts its trigger_id
// for views.open; past it the modal cannot open (expired_trigger_id).
const triggerWindow = 3 * time.Second

// feedbackStore is what feedback needs of the store: the turn a click
// names, to check it, and the rating's record. Every backend has both.
type feedbackStore interface {
	Turn(ctx context.Context, turnID string) (session.Turn, error)
	session.Feedbacks
}

// ratings is the store's feedback side, or nil for a store without one
// (then no buttons are shown).
func (b *Bot) ratings() feedbackStore {
	fs, _ := b.cfg.Store.(feedbackStore)
	return fs
}

// withFeedback puts the feedback buttons under the last of an answer's
// messages.
func (b *Bot) withFeedback(msgs []render.Outgoing, turnID string) {
	if b.ratings() == nil || len(msgs) == 0 {
		return
	}
	last := &msgs[len(msgs)-1]
	last.Blocks = append(last.Blocks[:len(last.Blocks):len(last.Blocks)], render.Feedback(turnID))
}

// onFeedback takes the interactions that are feedback: a click on the
// buttons, or the modal's submission. It reports whether cb was one. The
// work goes to the background: the read loop must not wait on the store
// or on views.open.
func (b *Bot) onFeedback(cb slack.InteractionCallback) bool {
	received := time.Now()
	switch cb.Type {
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID != render.FeedbackCallbackID {
			return false
		}
		b.bg.Go(func() { b.feedbackSubmitted(cb) })
		return true
	case slack.InteractionTypeBlockActions:
		for _, a := range cb.ActionCallback.BlockActions {
			if a != nil && a.ActionID == render.FeedbackActionID {
				b.bg.Go(func() { b.feedbackClicked(cb, a.Value, received) })
				return true
			}
		}
	}
	return false
}

// feedbackClicked checks a click and records it; for a 👎 it also opens
// the modal, within the click's trigger window.
func (b *Bot) feedbackClicked(cb slack.InteractionCallback, value string, received time.Time) {
	log := b.log.With("user", cb.User.ID, "channel", clickChannel(cb))
	fs := b.mayRate(cb.User.ID, log)
	if fs == nil {
		return
	}
	rating, turnID, ok := render.ParseFeedback(value)
	if !ok {
		log.Warn("feedback refused: the button's value is not one this service writes", "value", clip(value, 80))
		return
	}
	log = log.With("turn", turnID, "rating", rating)
	ctx, cancel := context.WithDeadline(b.slackCtx, received.Add(triggerWindow))
	defer cancel()
	if !b.feedbackTurnOK(ctx, fs, turnID, clickChannel(cb), cb.Container.ThreadTs, log) {
		return
	}
	// The modal and the record go at once: the modal must not wait on
	// the store past the trigger window, and the click's record must be
	// in before the person can submit the modal, whose record replaces it.
	var modal sync.WaitGroup
	if rating == render.RatingDown {
		modal.Go(func() { b.openFeedbackModal(ctx, cb.TriggerID, turnID, clickChannel(cb), log) })
	}
	if b.rate(fs, session.Feedback{TurnID: turnID, User: cb.User.ID, Rating: rating}, log) {
		b.metrics.feedback.WithLabelValues(rating).Inc()
		log.Info("feedback recorded")
	}
	modal.Wait()
}

// mayRate is the store's feedback side if user may rate answers: one who
// may not ask may not rate either. It is nil otherwise, or for a store
// without feedback.
func (b *Bot) mayRate(user string, log *slog.Logger) feedbackStore {
	fs := b.ratings()
	if fs != nil && b.allowU != nil && !b.allowU[user] {
		log.Info("feedback refused: user not enabled")
		return nil
	}
	return fs
}

// feedbackTurnOK reports whether turnID is a turn of the store, answered
// in channel (and thread, when the click says which): a button's value
// is only as good as the message it came with.
func (b *Bot) feedbackTurnOK(ctx context.Context, fs feedbackStore, turnID, channel, thread string, log *slog.Logger) bool {
	t, err := fs.Turn(ctx, turnID)
	switch {
	case errors.Is(err, session.ErrNotFound):
		log.Warn("feedback refused: no such turn (forged, or its thread was purged)")
		return false
	case err != nil:
		log.Error("feedback not recorded: the store could not read the turn", "err", err)
		return false
	case t.Key.Channel != channel || (thread != "" && t.Key.Thread != thread):
		log.Warn("feedback refused: it came from another conversation than the turn's", "turn_channel", t.Key.Channel)
		return false
	}
	return true
}

// openFeedbackModal opens the "what was wrong" modal with the click's
// trigger. Slack honours a trigger for 3 seconds from the click: ctx ends
// then, and a modal that could not open is logged (the 👎 itself is
// still recorded).
func (b *Bot) openFeedbackModal(ctx context.Context, trigger, turnID, channel string, log *slog.Logger) {
	_, err := b.api.OpenViewContext(ctx, trigger, render.FeedbackModal(turnID, channel, session.MaxFeedbackComment))
	if err != nil {
		b.cosmetic("views.open", err)
		log.Warn("feedback modal not opened; the rating is kept without a reason", "err", err)
	}
}

// feedbackSubmitted stores what a person said in the modal with their 👎.
func (b *Bot) feedbackSubmitted(cb slack.InteractionCallback) {
	log := b.log.With("user", cb.User.ID)
	fs := b.mayRate(cb.User.ID, log)
	if fs == nil {
		return
	}
	sub, ok := render.ParseFeedbackSubmission(cb.View, session.MaxFeedbackComment)
	if !ok {
		log.Warn("feedback refused: a submission of a view this service did not open")
		return
	}
	log = log.With("turn", sub.TurnID, "rating", render.RatingDown, "reason", sub.Reason)
	ctx, cancel := context.WithTimeout(b.slackCtx, storeTimeout)
	defer cancel()
	if !b.feedbackTurnOK(ctx, fs, sub.TurnID, sub.Channel, "", log) {
		return
	}
	// The comment is not logged: it is a person's words, kept for review.
	f := session.Feedback{TurnID: sub.TurnID, User: cb.User.ID, Rating: render.RatingDown, Reason: sub.Reason, Comment: sub.Comment}
	if b.rate(fs, f, log) {
		log.Info("feedback reason recorded", "comment_chars", utf8.RuneCountInString(sub.Comment))
	}
}

// storeTimeout bounds one write of feedback.
const storeTimeout = 10 * time.Second

func (b *Bot) rate(fs feedbackStore, f session.Feedback, log *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(b.slackCtx, storeTimeout)
	defer cancel()
	if err := fs.Rate(ctx, f); err != nil {
		log.Error("feedback not recorded", "err", err)
		return false
	}
	return true
}

// clip cuts an untrusted value for a log line.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// hasFeedback reports whether m carries the feedback buttons.
func hasFeedback(m render.Outgoing) bool {
	return slices.ContainsFunc(m.Blocks, isFeedbackBlock)
}

func isFeedbackBlock(blk slack.Block) bool {
	ca, ok := blk.(*slack.ContextActionsBlock)
	return ok && ca.BlockID == render.FeedbackBlockID
}

// postWithoutFeedback posts m again without its feedback buttons, after
// Slack refused it (a workspace or client that does not know the
// context_actions block): the answer keeps its formatting, and only the
// buttons are lost.
func (b *Bot) postWithoutFeedback(ctx context.Context, in inbound, m render.Outgoing, refused error, log *slog.Logger) (render.Outgoing, string, error) {
	log.Warn("Slack refused the answer's part with the feedback buttons; posting it without them", "err", refused)
	m.Blocks = slices.DeleteFunc(slices.Clone(m.Blocks), isFeedbackBlock)
	ts, err := b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, m)
	return m, ts, err
}
