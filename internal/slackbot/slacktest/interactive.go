package slacktest

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// ButtonClick describes a user pressing a button in a message.
type ButtonClick struct {
	User      string
	Channel   string
	MessageTS string
	// ThreadTS is the thread the message lives in, "" if top-level.
	ThreadTS string
	ActionID string
	BlockID  string
	Value    string
	// Text is the button label.
	Text string
	// Type is the element's type: "button" when empty, or
	// "feedback_buttons" for a click on one of an answer's 👍/👎.
	Type string
}

// ClickButton sends the block_actions interaction Slack delivers when b's button is
// pressed. The message is copied from the store when known, and response_url points
// back at the fake (posts there are recorded as calls to "response_url").
func (s *Server) ClickButton(b ButtonClick) string {
	return s.SendInteraction(s.clickPayload(b))
}

// ClickButtonTo is ClickButton on connection conn: Slack delivers an
// interaction to any of an app's connections, not only to the process that
// posted the button. It fails as SendEventTo does if conn is not live.
func (s *Server) ClickButtonTo(conn int, b ButtonClick) (string, error) {
	return s.SendInteractionTo(conn, s.clickPayload(b))
}

func (s *Server) clickPayload(b ButtonClick) map[string]any {
	s.mu.Lock()
	s.clickSeq++
	n := s.clickSeq
	msg := map[string]any{"type": "message", "ts": b.MessageTS}
	if m, ok := s.st.Message(b.Channel, b.MessageTS); ok {
		msg = s.wireMessage(m)
	}
	s.issueTriggerLocked("trigger-"+strconv.Itoa(n), b.User)
	s.mu.Unlock()
	container := map[string]any{
		"type":         "message",
		"message_ts":   b.MessageTS,
		"channel_id":   b.Channel,
		"is_ephemeral": false,
	}
	if b.ThreadTS != "" {
		container["thread_ts"] = b.ThreadTS
	}
	actionTS := s.NextTS()
	typ := b.Type
	if typ == "" {
		typ = "button"
	}
	return map[string]any{
		"type": "block_actions",
		"user": map[string]any{
			"id": b.User, "username": b.User, "name": b.User, "team_id": s.cfg.TeamID,
		},
		"api_app_id":            s.cfg.AppID,
		"token":                 "fake-verification-token",
		"container":             container,
		"trigger_id":            "trigger-" + strconv.Itoa(n),
		"team":                  map[string]any{"id": s.cfg.TeamID, "domain": s.cfg.TeamName},
		"enterprise":            nil,
		"is_enterprise_install": false,
		"channel":               map[string]any{"id": b.Channel, "name": s.channelName(b.Channel)},
		"message":               msg,
		"state":                 map[string]any{"values": map[string]any{}},
		"response_url":          s.URL + "/response/" + strconv.Itoa(n),
		"actions": []any{map[string]any{
			"action_id": b.ActionID,
			"block_id":  b.BlockID,
			"text":      map[string]any{"type": "plain_text", "text": b.Text, "emoji": true},
			"value":     b.Value,
			"type":      typ,
			"action_ts": actionTS,
		}},
	}
}

func (s *Server) channelName(id string) string {
	if n := s.cfg.Channels[id]; n != "" {
		return n
	}
	return id
}

// SendInteraction sends payload (an interaction such as block_actions) in an
// "interactive" envelope with accepts_response_payload true, as Slack does. It
// returns the envelope ID.
func (s *Server) SendInteraction(payload map[string]any) string {
	f, id := s.interactionFrame(payload)
	s.deliver(f)
	return id
}

// SendInteractionTo is SendInteraction on connection conn; it fails as
// SendEventTo does if conn is not live.
func (s *Server) SendInteractionTo(conn int, payload map[string]any) (string, error) {
	f, id := s.interactionFrame(payload)
	return id, s.sendTo(conn, f)
}

func (s *Server) interactionFrame(payload map[string]any) (*outFrame, string) {
	s.mu.Lock()
	id := s.newEnvelopeIDLocked()
	data, err := json.Marshal(map[string]any{
		"envelope_id":              id,
		"type":                     "interactive",
		"accepts_response_payload": true,
		"retry_attempt":            0,
		"retry_reason":             "",
		"payload":                  payload,
	})
	if err != nil {
		s.mu.Unlock()
		panic(fmt.Sprintf("slacktest: SendInteraction: payload must be JSON-encodable: %v", err))
	}
	f := s.addEnvelopeLocked(Envelope{ID: id, Type: "interactive", Frame: data})
	s.mu.Unlock()
	return f, id
}
