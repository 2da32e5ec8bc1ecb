package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Limits Slack enforces on chat.postMessage and chat.update that a renderer can break.
const (
	maxBlocks       = 50
	maxTextRunes    = 40_000
	maxMarkdownText = 12_000
)

// Response is a scripted answer for FailNext and FailAlways.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// RateLimited answers like Slack's rate limiter: HTTP 429 with Retry-After in whole
// seconds (rounded up), which slack-go turns into *slack.RateLimitedError.
func RateLimited(retryAfter time.Duration) Response {
	secs := int64(math.Ceil(retryAfter.Seconds()))
	return Response{
		Status: http.StatusTooManyRequests,
		Header: http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}, "Content-Type": {"application/json"}},
		Body:   []byte(`{"ok":false,"error":"ratelimited"}`),
	}
}

// HTTPError answers with a bare HTTP status and an HTML body, as Slack's edge does on
// 5xx; slack-go turns it into slack.StatusCodeError.
func HTTPError(code int) Response {
	return Response{
		Status: code,
		Header: http.Header{"Content-Type": {"text/html"}},
		Body:   []byte("<html><body>" + http.StatusText(code) + "</body></html>"),
	}
}

// SlackError answers HTTP 200 {"ok":false,"error":code}; slack-go turns it into
// slack.SlackErrorResponse.
func SlackError(code string) Response {
	b, _ := json.Marshal(map[string]any{"ok": false, "error": code})
	return Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}

// apiError is a Slack error code answered with HTTP 200 and ok:false.
type apiError string

type apiHandler func(s *Server, c *Call) (map[string]any, apiError)

// tokenKind says which token a method takes; Slack answers not_allowed_token_type
// when the other kind is used.
type tokenKind int

const (
	botToken tokenKind = iota
	appToken
)

type apiMethod struct {
	token   tokenKind
	handler apiHandler
}

var apiMethods = map[string]apiMethod{
	"auth.test":                   {botToken, (*Server).authTest},
	"apps.connections.open":       {appToken, (*Server).connectionsOpen},
	"chat.postMessage":            {botToken, (*Server).postMessage},
	"chat.postEphemeral":          {botToken, (*Server).postEphemeral},
	"chat.update":                 {botToken, (*Server).updateMessage},
	"chat.delete":                 {botToken, (*Server).deleteMessage},
	"reactions.add":               {botToken, (*Server).addReaction},
	"reactions.remove":            {botToken, (*Server).removeReaction},
	"assistant.threads.setStatus": {botToken, (*Server).setStatus},
	"conversations.replies":       {botToken, (*Server).replies},
	"conversations.info":          {botToken, (*Server).conversationInfo},
	"users.info":                  {botToken, (*Server).userInfo},
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, perr := readParams(r)
	call := Call{
		Method: method,
		Params: params,
		Token:  requestToken(r, params),
		At:     time.Now(),
	}
	if raw := params.Get("blocks"); raw != "" {
		_ = json.Unmarshal([]byte(raw), &call.Blocks)
	}

	// The call is visible from its arrival, so a test can see the bot blocked in a
	// held call; Status stays 0 until it is answered.
	s.mu.Lock()
	idx := len(s.st.Calls)
	s.st.Calls = append(s.st.Calls, call)
	h := s.holds[method]
	s.notifyLocked()
	s.mu.Unlock()
	if h != nil {
		select {
		case <-h.ch:
		case <-r.Context().Done():
			s.mu.Lock()
			s.st.Calls[idx].Error = "client_gave_up"
			s.notifyLocked()
			s.mu.Unlock()
			return
		}
	}

	s.mu.Lock()
	var echo *Message
	resp, scripted := s.takeFailureLocked(method)
	if scripted {
		call.Injected = true
		call.Status = resp.Status
		call.Error = errorCode(resp.Body)
	} else {
		var (
			result map[string]any
			code   apiError
		)
		switch {
		case perr != nil:
			code = "invalid_form_data"
		default:
			result, code = s.dispatchLocked(&call)
		}
		if code != "" {
			result = map[string]any{"ok": false, "error": string(code)}
		} else {
			result["ok"] = true
			if method == "chat.postMessage" && s.cfg.EchoBotPosts {
				m := s.st.Messages[len(s.st.Messages)-1]
				echo = &m
			}
		}
		body, err := json.Marshal(result)
		if err != nil {
			body = []byte(`{"ok":false,"error":"internal_error"}`)
		}
		resp = Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
		call.Status, call.Error = resp.Status, string(code)
	}
	s.st.Calls[idx].Status = call.Status
	s.st.Calls[idx].Error = call.Error
	s.st.Calls[idx].Injected = call.Injected
	s.notifyLocked()
	s.mu.Unlock()

	s.log.Debug("api call", "method", method, "status", resp.Status, "error", call.Error, "injected", scripted)
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
	if echo != nil {
		s.echo(*echo)
	}
}

// echo delivers the bot's own post back as a message event, as Slack does for apps
// subscribed to message.channels / message.im; the bot must recognise and ignore it.
func (s *Server) echo(m Message) {
	ev := AppMessage(m.Channel, channelType(m.Channel), m.User, m.BotID, m.Text, m.TS, m.ThreadTS).
		With("app_id", s.cfg.AppID).
		With("bot_profile", map[string]any{"id": m.BotID, "name": s.cfg.BotName, "app_id": s.cfg.AppID, "deleted": false})
	if m.Blocks != nil {
		ev = ev.With("blocks", m.Blocks)
	}
	s.SendEvent(ev)
}

// channelType guesses an event's channel_type from the ID prefix Slack uses.
func channelType(id string) string {
	switch {
	case strings.HasPrefix(id, "D"):
		return "im"
	case strings.HasPrefix(id, "G"):
		return "group"
	default:
		return "channel"
	}
}

// hold is a gate for calls to one method; open is idempotent.
type hold struct {
	ch   chan struct{}
	once sync.Once
}

func (h *hold) open() { h.once.Do(func() { close(h.ch) }) }

// Hold makes calls to method wait, recorded but unanswered (Status 0), until release
// is called, so a test can observe the bot while a Slack call is in flight (e.g. that
// it acked the envelope before chat.postMessage returned). release is idempotent;
// Close releases every hold.
func (s *Server) Hold(method string) (release func()) {
	h := &hold{ch: make(chan struct{})}
	s.mu.Lock()
	if old := s.holds[method]; old != nil {
		old.open()
	}
	s.holds[method] = h
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.holds[method] == h {
			delete(s.holds, method)
		}
		s.mu.Unlock()
		h.open()
	}
}

func (s *Server) dispatchLocked(c *Call) (map[string]any, apiError) {
	m, ok := apiMethods[c.Method]
	if !ok {
		return nil, "unknown_method"
	}
	if code := s.checkToken(m.token, c.Token); code != "" {
		return nil, code
	}
	return m.handler(s, c)
}

// checkToken mirrors Slack: no token is not_authed, the wrong kind of token is
// not_allowed_token_type, an unknown token is invalid_auth.
func (s *Server) checkToken(kind tokenKind, tok string) apiError {
	want, other := s.cfg.BotToken, s.cfg.AppToken
	if kind == appToken {
		want, other = other, want
	}
	switch {
	case tok == "":
		return "not_authed"
	case tok == want:
		return ""
	case tok == other, kind == appToken && !strings.HasPrefix(tok, "xapp-"), kind == botToken && strings.HasPrefix(tok, "xapp-"):
		return "not_allowed_token_type"
	default:
		return "invalid_auth"
	}
}

func requestToken(r *http.Request, params url.Values) string {
	if tok := params.Get("token"); tok != "" {
		return tok
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

// readParams accepts what Slack accepts: query parameters, form bodies and JSON
// bodies. Non-string JSON values (blocks sent as an array) are re-encoded as JSON
// text so that every method reads its parameters the same way.
func readParams(r *http.Request) (url.Values, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/json" {
		if err := r.ParseForm(); err != nil {
			return url.Values{}, err
		}
		return r.Form, nil
	}
	params := r.URL.Query()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return params, err
	}
	if len(strings.TrimSpace(string(body))) == 0 || string(body) == "null" {
		return params, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return params, err
	}
	for k, raw := range fields {
		var str string
		if json.Unmarshal(raw, &str) == nil {
			params.Set(k, str)
			continue
		}
		params.Set(k, string(raw))
	}
	return params, nil
}

func errorCode(body []byte) string {
	var r struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &r)
	return r.Error
}

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
	if blocks != "" {
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
	}
	if needContent && text == "" && blocks == "" && md == "" && p.Get("attachments") == "" {
		return "no_text"
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
	m := Message{
		Channel:      channel,
		TS:           s.nextTSLocked(),
		ThreadTS:     p.Get("thread_ts"),
		User:         s.cfg.BotUserID,
		BotID:        s.cfg.BotID,
		Text:         p.Get("text"),
		MarkdownText: p.Get("markdown_text"),
		Blocks:       c.Blocks,
		Via:          c.Method,
		At:           c.At,
	}
	s.st.Messages = append(s.st.Messages, m)
	return map[string]any{"channel": channel, "ts": m.TS, "message": s.wireMessage(m)}, ""
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
	m := Message{
		Channel:   channel,
		TS:        s.nextTSLocked(),
		ThreadTS:  p.Get("thread_ts"),
		User:      s.cfg.BotUserID,
		BotID:     s.cfg.BotID,
		Text:      p.Get("text"),
		Blocks:    c.Blocks,
		Ephemeral: true,
		Recipient: user,
		Via:       c.Method,
		At:        c.At,
	}
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

// serveResponseURL records posts to the response_url of interaction payloads as calls
// to the pseudo-method "response_url".
func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	params, err := readParams(r)
	call := Call{Method: "response_url", Params: params, At: time.Now(), Status: http.StatusOK}
	if err != nil {
		call.Status, call.Error = http.StatusBadRequest, "invalid_payload"
	}
	if raw := params.Get("blocks"); raw != "" {
		_ = json.Unmarshal([]byte(raw), &call.Blocks)
	}
	s.mu.Lock()
	s.st.Calls = append(s.st.Calls, call)
	s.notifyLocked()
	s.mu.Unlock()
	if err != nil {
		http.Error(w, fmt.Sprintf("invalid payload: %v", err), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}`))
}
