package slacktest

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

func (s *Server) authTest(*Call) (map[string]any, apiError) {
	return map[string]any{
		"url":                   "https://" + s.cfg.TeamName + ".slack.com/",
		"team":                  s.cfg.TeamName,
		"user":                  s.cfg.BotName,
		"team_id":               s.cfg.TeamID,
		"user_id":               s.cfg.BotUserID,
		"bot_id":                s.cfg.BotID,
		"is_enterprise_install": false,
	}, ""
}

func (s *Server) connectionsOpen(*Call) (map[string]any, apiError) {
	s.st.Tickets++
	ticket := strconv.Itoa(s.st.Tickets)
	s.tickets[ticket] = true
	return map[string]any{"url": s.wsURL(ticket)}, ""
}

// validateContent applies the checks Slack makes on message content.
func validateContent(p url.Values, c *Call, needContent bool) apiError {
	text, blocks, md := p.Get("text"), p.Get("blocks"), p.Get("markdown_text")
	if md != "" && (text != "" || p.Has("blocks")) {
		return "markdown_text_conflict"
	}
	if utf8.RuneCountInString(md) > maxMarkdownText {
		return "markdown_text_too_long"
	}
	if utf8.RuneCountInString(text) > maxTextRunes {
		return "msg_too_long"
	}
	if code := validateBlocks(blocks, c); code != "" {
		return code
	}
	if needContent && text == "" && blocks == "" && md == "" && p.Get("attachments") == "" {
		return "no_text"
	}
	return ""
}

// validateBlocks checks a blocks parameter: JSON, at most 50, each typed.
func validateBlocks(blocks string, c *Call) apiError {
	if blocks == "" {
		return ""
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(blocks), &raw); err != nil {
		return "invalid_blocks_format"
	}
	if len(raw) > maxBlocks || len(c.Blocks) != len(raw) {
		return "invalid_blocks"
	}
	for _, b := range c.Blocks {
		if t, _ := b["type"].(string); t == "" {
			return "invalid_blocks"
		}
	}
	return ""
}

func (s *Server) postMessage(c *Call) (map[string]any, apiError) {
	p := c.Params
	channel := p.Get("channel")
	if channel == "" {
		return nil, "channel_not_found"
	}
	if code := validateContent(p, c, true); code != "" {
		return nil, code
	}
	m := s.botMessageLocked(c, channel)
	m.MarkdownText = p.Get("markdown_text")
	meta, code := readMetadata(p)
	if code != "" {
		return nil, code
	}
	m.Metadata = meta
	s.st.Messages = append(s.st.Messages, m)
	return map[string]any{"channel": channel, "ts": m.TS, "message": s.wireMessage(m)}, ""
}

// botMessageLocked is what the bot posts to channel with c: its text and
// blocks, in its thread, on the next timestamp.
func (s *Server) botMessageLocked(c *Call, channel string) Message {
	return Message{
		Channel:  channel,
		TS:       s.nextTSLocked(),
		ThreadTS: c.Params.Get("thread_ts"),
		User:     s.cfg.BotUserID,
		BotID:    s.cfg.BotID,
		Text:     c.Params.Get("text"),
		Blocks:   c.Blocks,
		Via:      c.Method,
		At:       c.At,
	}
}

func (s *Server) postEphemeral(c *Call) (map[string]any, apiError) {
	p := c.Params
	channel, user := p.Get("channel"), p.Get("user")
	if channel == "" {
		return nil, "channel_not_found"
	}
	if user == "" {
		return nil, "user_not_found"
	}
	if code := validateContent(p, c, true); code != "" {
		return nil, code
	}
	m := s.botMessageLocked(c, channel)
	m.Ephemeral, m.Recipient = true, user
	s.st.Messages = append(s.st.Messages, m)
	return map[string]any{"message_ts": m.TS}, ""
}

// ownMessageLocked finds a visible message the bot may edit or delete.
func (s *Server) ownMessageLocked(channel, ts string, denied apiError) (*Message, apiError) {
	if channel == "" {
		return nil, "channel_not_found"
	}
	for i := range s.st.Messages {
		m := &s.st.Messages[i]
		if m.Channel != channel || m.TS != ts || m.Ephemeral {
			continue
		}
		if m.Deleted {
			return nil, "message_not_found"
		}
		if m.BotID != s.cfg.BotID {
			return nil, denied
		}
		return m, ""
	}
	return nil, "message_not_found"
}

func (s *Server) updateMessage(c *Call) (map[string]any, apiError) {
	p := c.Params
	m, code := s.ownMessageLocked(p.Get("channel"), p.Get("ts"), "cant_update_message")
	if code != "" {
		return nil, code
	}
	if code := validateContent(p, c, false); code != "" {
		return nil, code
	}
	m.Edits = append(slices.Clone(m.Edits), Edit{Text: m.Text, Blocks: m.Blocks, At: c.At})
	if p.Has("text") {
		m.Text = p.Get("text")
	}
	if p.Has("blocks") {
		m.Blocks = c.Blocks
	}
	if p.Has("markdown_text") {
		m.MarkdownText = p.Get("markdown_text")
	}
	if p.Has("metadata") {
		meta, code := readMetadata(p)
		if code != "" {
			return nil, code
		}
		m.Metadata = meta
	}
	return map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text, "message": s.wireMessage(*m)}, ""
}

func (s *Server) deleteMessage(c *Call) (map[string]any, apiError) {
	p := c.Params
	m, code := s.ownMessageLocked(p.Get("channel"), p.Get("ts"), "cant_delete_message")
	if code != "" {
		return nil, code
	}
	m.Deleted = true
	return map[string]any{"channel": m.Channel, "ts": m.TS}, ""
}

func (s *Server) reactionTargetLocked(c *Call) (*Message, string, apiError) {
	p := c.Params
	name := strings.Trim(p.Get("name"), ":")
	if name == "" {
		return nil, "", "invalid_name"
	}
	for i := range s.st.Messages {
		m := &s.st.Messages[i]
		if m.Channel == p.Get("channel") && m.TS == p.Get("timestamp") && !m.Deleted && !m.Ephemeral {
			return m, name, ""
		}
	}
	return nil, "", "message_not_found"
}

func (s *Server) addReaction(c *Call) (map[string]any, apiError) {
	m, name, code := s.reactionTargetLocked(c)
	if code != "" {
		return nil, code
	}
	if slices.Contains(m.Reactions, name) {
		return nil, "already_reacted"
	}
	m.Reactions = append(slices.Clone(m.Reactions), name)
	return map[string]any{}, ""
}

func (s *Server) removeReaction(c *Call) (map[string]any, apiError) {
	m, name, code := s.reactionTargetLocked(c)
	if code != "" {
		return nil, code
	}
	i := slices.Index(m.Reactions, name)
	if i < 0 {
		return nil, "no_reaction"
	}
	m.Reactions = slices.Delete(slices.Clone(m.Reactions), i, i+1)
	return map[string]any{}, ""
}

func (s *Server) setStatus(c *Call) (map[string]any, apiError) {
	p := c.Params
	if p.Get("channel_id") == "" {
		return nil, "channel_not_found"
	}
	if p.Get("thread_ts") == "" {
		return nil, "invalid_arguments"
	}
	st := Status{Channel: p.Get("channel_id"), ThreadTS: p.Get("thread_ts"), Status: p.Get("status"), At: c.At}
	if lm := p.Get("loading_messages"); lm != "" {
		// slack-go joins the list with commas; a JSON array is what other clients send.
		if json.Unmarshal([]byte(lm), &st.LoadingMessages) != nil {
			st.LoadingMessages = strings.Split(lm, ",")
		}
	}
	s.st.Statuses = append(s.st.Statuses, st)
	return map[string]any{}, ""
}

// replies answers conversations.replies from the message store: the thread that
// contains ts, root first, paged by limit with the index as cursor.
func (s *Server) replies(c *Call) (map[string]any, apiError) {
	p := c.Params
	channel, ts := p.Get("channel"), p.Get("ts")
	if channel == "" {
		return nil, "channel_not_found"
	}
	target, ok := s.st.Message(channel, ts)
	if !ok || target.Deleted || target.Ephemeral {
		return nil, "thread_not_found"
	}
	root := ts
	if target.IsReply() {
		root = target.ThreadTS
	}
	thread := s.st.Thread(channel, root)
	start := 0
	if cur := p.Get("cursor"); cur != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cur, "page:"))
		if err != nil || n < 0 || n > len(thread) {
			return nil, "invalid_cursor"
		}
		start = n
	}
	limit := 1000
	if l, err := strconv.Atoi(p.Get("limit")); err == nil && l > 0 {
		limit = l
	}
	end := min(start+limit, len(thread))
	msgs := make([]map[string]any, 0, end-start)
	for _, m := range thread[start:end] {
		w := s.wireMessage(m)
		if m.Metadata != nil && (p.Get("include_all_metadata") == "1" || p.Get("include_all_metadata") == "true") {
			w["metadata"] = m.Metadata
		}
		if m.TS == root && len(thread) > 1 {
			w["thread_ts"] = root
			w["reply_count"] = len(thread) - 1
		}
		msgs = append(msgs, w)
	}
	out := map[string]any{"messages": msgs, "has_more": end < len(thread)}
	if end < len(thread) {
		out["response_metadata"] = map[string]any{"next_cursor": "page:" + strconv.Itoa(end)}
	}
	return out, ""
}

func (s *Server) conversationInfo(c *Call) (map[string]any, apiError) {
	id := c.Params.Get("channel")
	if id == "" {
		return nil, "channel_not_found"
	}
	name := s.cfg.Channels[id]
	if name == "" {
		name = strings.ToLower(id)
	}
	ch := map[string]any{
		"id":              id,
		"name":            name,
		"is_channel":      strings.HasPrefix(id, "C"),
		"is_group":        strings.HasPrefix(id, "G"),
		"is_im":           strings.HasPrefix(id, "D"),
		"is_private":      !strings.HasPrefix(id, "C"),
		"is_member":       true,
		"is_archived":     false,
		"context_team_id": s.cfg.TeamID,
	}
	return map[string]any{"channel": ch}, ""
}

func (s *Server) userInfo(c *Call) (map[string]any, apiError) {
	id := c.Params.Get("user")
	if id == "" {
		return nil, "user_not_found"
	}
	name, isBot := s.cfg.Users[id], id == s.cfg.BotUserID
	if isBot {
		name = s.cfg.BotName
	}
	if name == "" {
		name = strings.ToLower(id)
	}
	return map[string]any{"user": map[string]any{
		"id":        id,
		"team_id":   s.cfg.TeamID,
		"name":      name,
		"real_name": name,
		"is_bot":    isBot,
		"profile":   map[string]any{"display_name": name, "real_name": name},
	}}, ""
}

// wireMessage renders a stored message the way the Web API returns it.
func (s *Server) wireMessage(m Message) map[string]any {
	w := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "team": s.cfg.TeamID}
	if m.User != "" {
		w["user"] = m.User
	}
	if m.BotID != "" {
		w["bot_id"] = m.BotID
		if m.Via != "event" {
			w["app_id"] = s.cfg.AppID
		}
	}
	if m.Subtype != "" {
		w["subtype"] = m.Subtype
	}
	if m.IsReply() {
		w["thread_ts"] = m.ThreadTS
	}
	if m.Blocks != nil {
		w["blocks"] = m.Blocks
	}
	if len(m.Edits) > 0 {
		last := m.Edits[len(m.Edits)-1]
		w["edited"] = map[string]any{"user": m.User, "ts": formatTS(last.At.UnixMicro())}
	}
	if len(m.Reactions) > 0 {
		rs := make([]map[string]any, 0, len(m.Reactions))
		for _, r := range m.Reactions {
			rs = append(rs, map[string]any{"name": r, "users": []string{s.cfg.BotUserID}, "count": 1})
		}
		w["reactions"] = rs
	}
	return w
}

// readMetadata decodes a message's "metadata" parameter, which Slack
// requires to carry an event_type and an event_payload object.
func readMetadata(p url.Values) (map[string]any, apiError) {
	raw := p.Get("metadata")
	if raw == "" {
		return nil, ""
	}
	var meta map[string]any
	if json.Unmarshal([]byte(raw), &meta) != nil {
		return nil, "invalid_metadata_format"
	}
	if t, _ := meta["event_type"].(string); t == "" {
		return nil, "invalid_metadata_schema"
	}
	if _, ok := meta["event_payload"].(map[string]any); !ok {
		return nil, "invalid_metadata_schema"
	}
	return meta, ""
}
