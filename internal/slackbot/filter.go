package slackbot

import (
	"regexp"
	"strings"
	"sync"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/askrepo/askrepo/internal/session"
)

// inbound is a human message the bot may answer, as the filters see it.
type inbound struct {
	Key     session.Key
	EventID string
	User    string
	TS      string // the message's own ts: replies, reactions and dedupe
	Text    string // the bot's mention removed
	IM      bool
	// FollowUp marks a thread reply without a mention: it is answered only
	// if the thread already has a session and follow-ups are on.
	FollowUp bool
	entry
}

// Reasons an event is not answered; they label a metric and a debug line.
const (
	ignoreSelf     = "own_message"
	ignoreBot      = "bot_message"
	ignoreSubtype  = "subtype"
	ignoreEdited   = "edited"
	ignoreTopLevel = "top_level_without_mention"
	ignoreMention  = "mention_in_message_event" // app_mention carries it
	ignoreNoUser   = "no_user"
	ignoreNoThread = "thread_without_session"
	ignorePolicy   = "followups_need_mention"
	ignoreDup      = "duplicate"
	ignoreOther    = "unhandled_event"
)

// fromMention filters an app_mention. Slack sends app_mention for mentions
// in channels only (DMs come as message.im), including thread replies.
func fromMention(team, eventID string, ev *slackevents.AppMentionEvent, self identity) (inbound, string) {
	switch {
	case ev.BotID != "":
		return inbound{}, ignoreBot
	case ev.User == "":
		return inbound{}, ignoreNoUser
	case ev.User == self.UserID:
		return inbound{}, ignoreSelf
	case ev.Edited != nil:
		// An edit that adds a mention is delivered again as app_mention; the
		// question was (or was not) answered the first time.
		return inbound{}, ignoreEdited
	}
	return inbound{
		Key:     session.Key{Team: team, Channel: ev.Channel, Thread: threadRoot(ev.ThreadTimeStamp, ev.TimeStamp)},
		EventID: eventID,
		User:    ev.User,
		TS:      ev.TimeStamp,
		Text:    stripMention(ev.Text, self.UserID),
	}, ""
}

// fromMessage filters a message event (message.channels, .groups, .im).
func fromMessage(team, eventID string, ev *slackevents.MessageEvent, self identity) (inbound, string) {
	switch {
	case ev.BotID != "" || ev.SubType == slack.MsgSubTypeBotMessage:
		if ev.User != "" && ev.User == self.UserID {
			return inbound{}, ignoreSelf
		}
		return inbound{}, ignoreBot
	case ev.User != "" && ev.User == self.UserID:
		return inbound{}, ignoreSelf
	}
	switch ev.SubType {
	case "", slack.MsgSubTypeFileShare, slack.MsgSubTypeThreadBroadcast:
	default:
		// message_changed, message_deleted, channel_join, me_message, …
		return inbound{}, ignoreSubtype
	}
	if ev.User == "" {
		return inbound{}, ignoreNoUser
	}
	in := inbound{
		Key:     session.Key{Team: team, Channel: ev.Channel, Thread: threadRoot(ev.ThreadTimeStamp, ev.TimeStamp)},
		EventID: eventID,
		User:    ev.User,
		TS:      ev.TimeStamp,
		Text:    stripMention(ev.Text, self.UserID),
	}
	if ev.ChannelType == slack.TYPE_IM {
		// Every human message in a DM is for the bot; a top-level one starts
		// a session answered in its own thread.
		in.IM = true
		return in, ""
	}
	if ev.ThreadTimeStamp == "" || ev.ThreadTimeStamp == ev.TimeStamp {
		return inbound{}, ignoreTopLevel
	}
	if mentions(ev.Text, self.UserID) {
		return inbound{}, ignoreMention
	}
	in.FollowUp = true
	return in, ""
}

func threadRoot(threadTS, ts string) string {
	if threadTS != "" {
		return threadTS
	}
	return ts
}

// mentionRE matches a user mention token: <@U123> or <@U123|name>.
var mentionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<@([A-Z0-9]+)(?:\|[^>]*)?>`) })

func mentions(text, userID string) bool {
	if userID == "" {
		return false
	}
	for _, m := range mentionRE().FindAllStringSubmatch(text, -1) {
		if m[1] == userID {
			return true
		}
	}
	return false
}

// stripMention removes the bot's own mention tokens: the leading one is how
// the question was addressed, and the others tell the model nothing.
func stripMention(text, userID string) string {
	if userID == "" {
		return strings.TrimSpace(text)
	}
	out := mentionRE().ReplaceAllStringFunc(text, func(tok string) string {
		if mentionRE().FindStringSubmatch(tok)[1] == userID {
			return ""
		}
		return tok
	})
	// Removing a token in mid-sentence leaves two spaces; keep newlines.
	for strings.Contains(out, "  ") {
		out = strings.ReplaceAll(out, "  ", " ")
	}
	return strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(out), ",:"))
}

// allowed reports whether the bot answers user in channel.
func (b *Bot) allowed(in inbound) bool {
	if b.allowU != nil && !b.allowU[in.User] {
		return false
	}
	if !in.IM && b.allowCh != nil && !b.allowCh[in.Key.Channel] {
		return false
	}
	return true
}

// isIDByte reports whether c can be part of a Slack ID (upper case, digits).
func isIDByte(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
