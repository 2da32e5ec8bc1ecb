package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
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
	"chat.startStream":            {botToken, (*Server).startStream},
	"chat.appendStream":           {botToken, (*Server).appendStream},
	"chat.stopStream":             {botToken, (*Server).stopStream},
	"agents.sessions.setStatus":   {botToken, (*Server).setSessionStatus},
	"reactions.add":               {botToken, (*Server).addReaction},
	"reactions.remove":            {botToken, (*Server).removeReaction},
	"assistant.threads.setStatus": {botToken, (*Server).setStatus},
	"conversations.replies":       {botToken, (*Server).replies},
	"conversations.info":          {botToken, (*Server).conversationInfo},
	"users.info":                  {botToken, (*Server).userInfo},
	"views.open":                  {botToken, (*Server).openView},

	"assistant.threads.setSuggestedPrompts": {botToken, (*Server).setSuggestedPrompts},
	"assistant.threads.setTitle":            {botToken, (*Server).setTitle},
	"views.publish":                         {botToken, (*Server).viewsPublish},
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
	resp, echo, scripted := s.answerLocked(&call, perr)
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

// answerLocked answers call: with the failure a test scripted for its
// method, if any (scripted), else by running the method. It records the
// status and error in call, and returns the bot's own post when the fake
// echoes it back as an event.
func (s *Server) answerLocked(call *Call, perr error) (resp Response, echo *Message, scripted bool) {
	resp, scripted = s.takeFailureLocked(call.Method)
	if scripted {
		call.Injected = true
		call.Status = resp.Status
		call.Error = errorCode(resp.Body)
		return resp, nil, true
	}
	var (
		result map[string]any
		code   apiError
	)
	switch {
	case perr != nil:
		code = "invalid_form_data"
	default:
		result, code = s.dispatchLocked(call)
	}
	if code != "" {
		result = map[string]any{"ok": false, "error": string(code)}
	} else {
		result["ok"] = true
		if call.Method == "chat.postMessage" && s.cfg.EchoBotPosts {
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
	return resp, echo, false
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
