package slackbot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// The ways in that are not a message someone posted: the slash command and
// the message shortcut, whose question the bot posts itself, and the
// assistant panel, whose thread reads what the channel in view may read.
// Each ends as an inbound on the same intake as a mention: recorded in the
// inbox before the ack, deduped there, admitted by the same allow-lists and
// channel bindings, answered by the same turn.

// Ways a question came in, besides a message (entry.Via).
const (
	viaCommand  = "command"
	viaShortcut = "shortcut"
)

// entry is what an inbound carries about how it came in. It is stored with
// the question in the inbox, so a restart answers it the same way.
type entry struct {
	// Via is viaCommand or viaShortcut; "" for a message.
	Via string `json:"via,omitempty"`
	// Pending marks a question the bot has not posted yet: the intake
	// posts it (as a new thread's root for a command, in the message's
	// thread for a shortcut) and queues it once it has a ts.
	Pending bool `json:"pending,omitempty"`
	// Shown is the question as the thread shows it: what the asker typed,
	// without the context the model gets with it.
	Shown string `json:"shown,omitempty"`
	// ResponseURL is where a command or shortcut can answer its asker
	// alone, for 30 minutes: how a question the bot cannot post is told.
	ResponseURL string `json:"response_url,omitempty"`
	// Context is the channel an assistant panel thread was opened in view
	// of: its repositories answer the thread. "" for the DM's own.
	Context string `json:"context,omitempty"`
}

// repoChannel is the channel whose repositories answer in: the panel's
// channel in view, else the question's own.
func (in inbound) repoChannel() string {
	if in.Context != "" {
		return in.Context
	}
	return in.Key.Channel
}

// postPending posts a command's or a shortcut's question where it is
// answered, attributed to the asker, and queues it as a question with that
// message's ts, recorded in the inbox under the message's key before the
// command's own record is marked handled. A crash between the post and
// that record posts the question again at the next start; one after it
// answers the posted one.
func (b *Bot) postPending(qe queuedEvent) {
	in := qe.in
	b.background(func(ctx context.Context) {
		ts, err := b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, render.Outgoing{Text: askedText(in)})
		if err != nil {
			b.log.Error("post the question of a command or shortcut; it is not answered", "via", in.Via, "channel", in.Key.Channel, "user", in.User, "err", err)
			b.tellAsker(ctx, in, noteCannotPost)
			b.handled(qe.key)
			return
		}
		in.Pending, in.TS = false, ts
		if in.Key.Thread == "" {
			in.Key.Thread = ts
		}
		key := inboxKey(in)
		if data, err := json.Marshal(in); err == nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), receiveTimeout)
			_, err = b.cfg.Store.Receive(rctx, key, data, b.owner, b.hold, b.cfg.DedupeTTL)
			cancel()
			if err != nil {
				b.metrics.unrecorded.Inc()
				b.log.Error("record a posted question; answering it from memory", "thread", in.Key.String(), "err", err)
				key = ""
			}
		}
		b.handled(qe.key)
		b.intake.push(queuedEvent{in: in, typ: in.Via, key: key})
	})
}

// askedText is the message that shows a command's or a shortcut's
// question in the channel. What the asker typed is escaped and its bare
// broadcast words defused: the bot must not turn "<!channel>" or "@here"
// typed into a command into a real @channel, which the channel may allow
// the bot and not the asker.
func askedText(in inbound) string {
	shown := in.Shown
	if shown == "" {
		shown = in.Text
	}
	how := "asked"
	if in.Via == viaShortcut {
		how = "asked about this message"
	}
	return fmt.Sprintf("<@%s> %s:\n%s", in.User, how, quote(render.Typed(shown)))
}

// quote makes each line of text a block quote line.
func quote(text string) string {
	return "> " + strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n> ")
}

// noteCannotPost tells an asker the bot could not post their question:
// most often it is not a member of the channel.
const noteCannotPost = "I could not post your question here; if I am not in this channel, invite me with `/invite @askrepo` and ask again."

// tellAsker answers the asker of a command or shortcut alone, through its
// response_url.
func (b *Bot) tellAsker(ctx context.Context, in inbound, text string) {
	if in.ResponseURL == "" {
		return
	}
	err := slack.PostWebhookContext(ctx, in.ResponseURL, &slack.WebhookMessage{ResponseType: slack.ResponseTypeEphemeral, Text: text})
	b.cosmetic("response_url", err)
}
