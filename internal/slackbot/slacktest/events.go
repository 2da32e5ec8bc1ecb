package slacktest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"time"
)

// Event is one Events API inner event plus the delivery details of its envelope.
// Build it with AppMention, UserMessage and friends, adjust it with With, and send it
// with Server.SendEvent.
type Event struct {
	// Inner is the "event" object exactly as Slack sends it. A missing or empty "ts"
	// is filled from Server.NextTS when sent, and "event_ts" follows it.
	Inner map[string]any
	// EventID is the outer event_id; SendEvent assigns a fresh one when empty. Reuse
	// an ID to simulate a redelivery of the same event.
	EventID      string
	RetryAttempt int
	RetryReason  string
	// Team is the workspace the event comes from, as an app installed in
	// several (an org-wide install) hears: the envelope's team_id and
	// context_team_id, and a person's message's team. Empty is the
	// server's TeamID.
	Team string
}

// Type is the inner event type, e.g. "app_mention" or "message".
func (e Event) Type() string {
	t, _ := e.Inner["type"].(string)
	return t
}

// With returns a copy of e with one inner field set (or removed when value is nil).
// A json.RawMessage value is sent verbatim, which is how a test injects a malformed
// block that slack-go refuses to parse.
func (e Event) With(key string, value any) Event {
	e.Inner = maps.Clone(e.Inner)
	if value == nil {
		delete(e.Inner, key)
	} else {
		e.Inner[key] = value
	}
	return e
}

// Retry returns a copy of e marked as Slack's retry number attempt, with reason
// (Slack sends "timeout" when the previous delivery was not acked in time).
func (e Event) Retry(attempt int, reason string) Event {
	e.RetryAttempt, e.RetryReason = attempt, reason
	return e
}

// AppMention is the app_mention event Slack sends when a user writes "<@UBOT> …" in a
// channel. threadTS is "" for a top-level mention. The text is also rendered as a
// rich_text block, with mentions as user elements, as Slack's clients do.
func AppMention(channel, user, text, ts, threadTS string) Event {
	return Event{Inner: humanEvent("app_mention", channel, user, text, ts, threadTS)}
}

// humanEvent is the inner event a person's message produces, as app_mention
// or message: the fields both share.
func humanEvent(typ, channel, user, text, ts, threadTS string) map[string]any {
	in := map[string]any{
		"type":          typ,
		"client_msg_id": clientMsgID(channel, ts, text),
		"user":          user,
		"text":          text,
		"ts":            ts,
		"channel":       channel,
		"blocks":        richText(text),
	}
	if threadTS != "" {
		in["thread_ts"] = threadTS
	}
	return in
}

// UserMessage is a plain user message event as delivered for message.channels
// (channelType "channel"), message.groups ("group") or message.im ("im").
func UserMessage(channel, channelType, user, text, ts, threadTS string) Event {
	in := humanEvent("message", channel, user, text, ts, threadTS)
	in["channel_type"] = channelType
	return Event{Inner: in}
}

// BotMessage is a message posted by another integration: subtype bot_message with a
// bot_id and no user, the shape the bot must ignore.
func BotMessage(channel, channelType, botID, text, ts, threadTS string) Event {
	return postedMessage(channel, channelType, text, ts, threadTS, map[string]any{
		"subtype":  "bot_message",
		"bot_id":   botID,
		"username": "other-bot",
	})
}

// AppMessage is a message posted through chat.postMessage by an app: no subtype, but
// user, bot_id and bot_profile are set. This is how the bot's own posts come back to it
// over message.channels, and how other modern apps' posts look.
func AppMessage(channel, channelType, botUserID, botID, text, ts, threadTS string) Event {
	return postedMessage(channel, channelType, text, ts, threadTS, map[string]any{
		"user":        botUserID,
		"bot_id":      botID,
		"app_id":      "A" + botID,
		"bot_profile": map[string]any{"id": botID, "name": "app", "app_id": "A" + botID, "deleted": false},
	})
}

// postedMessage is a message event posted by an integration: the fields
// every message has, and by, the ones that say who posted it.
func postedMessage(channel, channelType, text, ts, threadTS string, by map[string]any) Event {
	in := map[string]any{
		"type":         "message",
		"text":         text,
		"ts":           ts,
		"channel":      channel,
		"channel_type": channelType,
	}
	maps.Copy(in, by)
	if threadTS != "" {
		in["thread_ts"] = threadTS
	}
	return Event{Inner: in}
}

// MessageChanged is the hidden message_changed event for an edit of the message at
// origTS by user. The event has its own ts; slack-go exposes the new version as
// MessageEvent.Message and the old one as PreviousMessage.
func MessageChanged(channel, channelType, user, origTS, threadTS, newText, oldText string) Event {
	msg := func(text string) map[string]any {
		m := map[string]any{"type": "message", "user": user, "text": text, "ts": origTS}
		if threadTS != "" {
			m["thread_ts"] = threadTS
		}
		return m
	}
	cur := msg(newText)
	cur["edited"] = map[string]any{"user": user, "ts": origTS}
	return Event{Inner: map[string]any{
		"type":             "message",
		"subtype":          "message_changed",
		"hidden":           true,
		"channel":          channel,
		"channel_type":     channelType,
		"message":          cur,
		"previous_message": msg(oldText),
	}}
}

// MessageDeleted is the hidden message_deleted event for the message at deletedTS.
func MessageDeleted(channel, channelType, deletedTS string) Event {
	return Event{Inner: map[string]any{
		"type":         "message",
		"subtype":      "message_deleted",
		"hidden":       true,
		"channel":      channel,
		"channel_type": channelType,
		"deleted_ts":   deletedTS,
	}}
}

// ChannelJoin is the channel_join message Slack posts when user joins channel.
func ChannelJoin(channel, user string) Event {
	return Event{Inner: map[string]any{
		"type":         "message",
		"subtype":      "channel_join",
		"user":         user,
		"text":         "<@" + user + "> has joined the channel",
		"channel":      channel,
		"channel_type": "channel",
	}}
}

// InnerEvent is any other inner event, e.g. a type slack-go does not know, which it
// reports as socketmode.EventTypeErrorBadMessage.
func InnerEvent(eventType string, fields map[string]any) Event {
	in := maps.Clone(fields)
	if in == nil {
		in = map[string]any{}
	}
	in["type"] = eventType
	return Event{Inner: in}
}

var mentionRE = regexp.MustCompile(`<@([UW][A-Z0-9]+)(?:\|[^>]*)?>`)

// richText renders text as the rich_text block Slack clients attach to messages.
func richText(text string) []Block {
	var elems []any
	last := 0
	for _, m := range mentionRE.FindAllStringSubmatchIndex(text, -1) {
		if m[0] > last {
			elems = append(elems, map[string]any{"type": "text", "text": text[last:m[0]]})
		}
		elems = append(elems, map[string]any{"type": "user", "user_id": text[m[2]:m[3]]})
		last = m[1]
	}
	if last < len(text) {
		elems = append(elems, map[string]any{"type": "text", "text": text[last:]})
	}
	return []Block{{
		"type":     "rich_text",
		"block_id": "rt",
		"elements": []any{map[string]any{"type": "rich_text_section", "elements": elems}},
	}}
}

func clientMsgID(channel, ts, text string) string {
	h := uint32(2166136261)
	for _, b := range []byte(channel + "/" + ts + "/" + text) {
		h = (h ^ uint32(b)) * 16777619
	}
	return fmt.Sprintf("%08x-0000-4000-8000-000000000000", h)
}

// SendEvent wraps ev in an events_api envelope, exactly as Slack frames it, and writes
// it to a live connection (or queues it until one connects). User messages and
// mentions are also stored, so conversations.replies sees them; message_changed and
// message_deleted are applied to the store. It returns the envelope ID to pass to
// WaitAck or Redeliver.
func (s *Server) SendEvent(ev Event) string {
	f, id := s.eventFrame(ev)
	s.deliver(f)
	return id
}

// Mention sends what Slack sends when user posts text naming the bot in
// channel: an app_mention event whose text starts "<@bot user> ", in the
// thread rooted at threadTS, or at the top level when threadTS is "". It
// returns the message's ts, for a top-level mention the root of the thread
// the bot answers in.
func (s *Server) Mention(channel, user, text, threadTS string) string {
	ev, ts := s.mention(channel, user, text, threadTS)
	s.SendEvent(ev)
	return ts
}

// MentionTo is Mention delivered on connection conn only, as Slack does
// when it picks that one of the app's connections.
func (s *Server) MentionTo(conn int, channel, user, text, threadTS string) (string, error) {
	ev, ts := s.mention(channel, user, text, threadTS)
	_, err := s.SendEventTo(conn, ev)
	return ts, err
}

func (s *Server) mention(channel, user, text, threadTS string) (Event, string) {
	ts := s.NextTS()
	return AppMention(channel, user, "<@"+s.cfg.BotUserID+"> "+text, ts, threadTS), ts
}

// Reply sends what Slack sends when user posts text in the thread rooted at
// threadTS of channel without naming the bot: a message event, as
// message.channels, message.groups or message.im deliver it (the channel
// type follows from the channel ID). With threadTS "" the message is
// top-level, as a direct message that starts a thread. It returns the
// message's ts.
func (s *Server) Reply(channel, user, text, threadTS string) string {
	ev, ts := s.reply(channel, user, text, threadTS)
	s.SendEvent(ev)
	return ts
}

// ReplyTo is Reply delivered on connection conn only.
func (s *Server) ReplyTo(conn int, channel, user, text, threadTS string) (string, error) {
	ev, ts := s.reply(channel, user, text, threadTS)
	_, err := s.SendEventTo(conn, ev)
	return ts, err
}

func (s *Server) reply(channel, user, text, threadTS string) (Event, string) {
	ts := s.NextTS()
	return UserMessage(channel, channelType(channel), user, text, ts, threadTS), ts
}

// eventFrame records ev (and its message) and builds its envelope, for
// delivery by the caller.
func (s *Server) eventFrame(ev Event) (*outFrame, string) {
	s.mu.Lock()
	in := maps.Clone(ev.Inner)
	if in == nil {
		in = map[string]any{}
	}
	ts, _ := in["ts"].(string)
	if ts == "" {
		ts = s.nextTSLocked()
		in["ts"] = ts
	} else {
		s.observeTSLocked(ts)
	}
	if _, ok := in["event_ts"]; !ok {
		in["event_ts"] = ts
	}
	team := s.cfg.TeamID
	if ev.Team != "" {
		team = ev.Team
	}
	if t := ev.Type(); t == "app_mention" || t == "message" {
		if _, ok := in["team"]; !ok && in["user"] != nil {
			in["team"] = team
		}
	}
	s.applyEventLocked(in)
	s.openAssistantThreadLocked(in)

	if ev.EventID == "" {
		s.eventSeq++
		ev.EventID = fmt.Sprintf("Ev%010d", s.eventSeq)
	}
	eventTime := time.Now().Unix()
	if m, ok := tsMicros(ts); ok {
		eventTime = m / 1_000_000
	}
	env := Envelope{ID: s.newEnvelopeIDLocked(), Type: "events_api", EventID: ev.EventID, RetryAttempt: ev.RetryAttempt}
	frame := map[string]any{
		"envelope_id":              env.ID,
		"type":                     "events_api",
		"accepts_response_payload": false,
		"retry_attempt":            ev.RetryAttempt,
		"retry_reason":             ev.RetryReason,
		"payload": map[string]any{
			"token":                 "fake-verification-token",
			"team_id":               team,
			"context_team_id":       team,
			"context_enterprise_id": nil,
			"api_app_id":            s.cfg.AppID,
			"event":                 in,
			"type":                  "event_callback",
			"event_id":              ev.EventID,
			"event_time":            eventTime,
			"authorizations": []any{map[string]any{
				"enterprise_id":         nil,
				"team_id":               s.cfg.TeamID,
				"user_id":               s.cfg.BotUserID,
				"is_bot":                true,
				"is_enterprise_install": false,
			}},
			"is_ext_shared_channel": false,
			"event_context":         "4-fake-" + ev.EventID,
		},
	}
	data, err := json.Marshal(frame)
	if err != nil {
		s.mu.Unlock()
		panic(fmt.Sprintf("slacktest: SendEvent: event fields must be JSON-encodable: %v", err))
	}
	env.Frame = data
	f := s.addEnvelopeLocked(env)
	s.mu.Unlock()
	s.log.Debug("send event", "envelope", env.ID, "event_id", ev.EventID, "type", ev.Type())
	return f, env.ID
}

// applyEventLocked mirrors a user-side event into the message store.
func (s *Server) applyEventLocked(in map[string]any) {
	str := func(m map[string]any, k string) string { v, _ := m[k].(string); return v }
	typ, sub, channel := str(in, "type"), str(in, "subtype"), str(in, "channel")
	if channel == "" || (typ != "message" && typ != "app_mention") {
		return
	}
	switch sub {
	case "", "bot_message", "thread_broadcast", "file_share", "me_message":
		ts := str(in, "ts")
		if _, ok := s.st.Message(channel, ts); ok {
			return // app_mention and message.channels for the same message
		}
		thread := str(in, "thread_ts")
		if thread != "" && in["parent_user_id"] == nil {
			if parent, ok := s.st.Message(channel, thread); ok && parent.User != "" {
				in["parent_user_id"] = parent.User
			}
		}
		s.st.Messages = append(s.st.Messages, Message{
			Channel:  channel,
			TS:       ts,
			ThreadTS: thread,
			User:     str(in, "user"),
			BotID:    str(in, "bot_id"),
			Subtype:  sub,
			Text:     str(in, "text"),
			Blocks:   toBlocks(in["blocks"]),
			Via:      "event",
			At:       time.Now(),
		})
	case "message_changed":
		cur, _ := in["message"].(map[string]any)
		for i := range s.st.Messages {
			m := &s.st.Messages[i]
			if m.Channel == channel && m.TS == str(cur, "ts") {
				m.Edits = append(append([]Edit(nil), m.Edits...), Edit{Text: m.Text, Blocks: m.Blocks, At: time.Now()})
				m.Text = str(cur, "text")
				m.Blocks = toBlocks(cur["blocks"])
			}
		}
	case "message_deleted":
		for i := range s.st.Messages {
			m := &s.st.Messages[i]
			if m.Channel == channel && m.TS == str(in, "deleted_ts") {
				m.Deleted = true
			}
		}
	}
}

func toBlocks(v any) []Block {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out []Block
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}
