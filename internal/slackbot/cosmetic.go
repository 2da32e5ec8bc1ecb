package slackbot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/slack-go/slack"
)

// react and the other cosmetic calls never fail a turn: a missing scope or a
// hiccup costs a log line at debug and a count in the metrics.
func (b *Bot) react(ctx context.Context, in inbound, name string) {
	err := b.api.AddReactionContext(ctx, name, slack.ItemRef{Channel: in.Key.Channel, Timestamp: in.TS})
	b.cosmetic("reactions.add", err)
}

func (b *Bot) unreact(ctx context.Context, in inbound, name string) {
	err := b.api.RemoveReactionContext(ctx, name, slack.ItemRef{Channel: in.Key.Channel, Timestamp: in.TS})
	b.cosmetic("reactions.remove", err)
}

// setStatus shows Slack's "is thinking" line under the thread. Slack clears
// it when the bot posts in the thread. Once refused for a reason that will
// not change, it is not asked again.
func (b *Bot) setStatus(ctx context.Context, in inbound, status string) {
	if b.statusOff.Load() {
		return
	}
	err := b.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: in.Key.Channel,
		ThreadTS:  in.Key.Thread,
		Status:    status,
	})
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "missing_scope", "not_allowed_token_type", "unknown_method", "method_deprecated", "feature_not_enabled":
			b.statusOff.Store(true)
		}
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code == 404 {
		b.statusOff.Store(true)
	}
	b.cosmetic("assistant.threads.setStatus", err)
}

func (b *Bot) cosmetic(method string, err error) {
	if err == nil {
		return
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		b.metrics.slackRateLimited.WithLabelValues(method).Inc()
	}
	b.metrics.slackErrors.WithLabelValues(method).Inc()
	b.log.Debug("cosmetic slack call failed", "method", method, "err", err)
}

// reject tells a question that was queued when shutdown began that it will
// not be answered now, so it is not silently dropped. A question the store
// recorded stays in its inbox, and a recovered turn that did not get to run
// stays unfinished, so the next start takes them up; the thread is told so.
func (b *Bot) reject(j *job) {
	b.metrics.turns.WithLabelValues(outcomeNotStarted).Inc()
	b.log.Warn("queued question not started before shutdown", "thread", j.in.Key.String(), "user", j.in.User, "recovered", j.recovered != nil, "kept", j.intake != "")
	note := "I am restarting and did not get to this question; please ask again in a minute."
	switch {
	case j.recovered != nil && j.recovered.mode != RecoverReport:
		note = noteNotStartedRe
	case j.intake != "":
		note = noteNotStartedNew
	}
	b.background(func(ctx context.Context) {
		if j.queuedSign != nil {
			<-j.queuedSign
			b.unreact(ctx, j.in, reactQueued)
		}
		b.postNote(ctx, j.in, note)
	})
}

// markQueued puts the hourglass on a question that has to wait.
func (b *Bot) markQueued(j *job) {
	b.background(func(ctx context.Context) {
		defer close(j.queuedSign)
		b.react(ctx, j.in, reactQueued)
	})
}

func newID(nBytes int) string {
	p := make([]byte, nBytes)
	_, _ = rand.Read(p)
	return strings.ToLower(hex.EncodeToString(p))
}
