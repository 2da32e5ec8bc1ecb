package slacktest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The other ways people reach an app besides messages: the slash command,
// the assistant panel, the Home tab and a message shortcut, as Slack frames
// them over Socket Mode.

// SlashCommand is what a person typing "/command text" sends.
type SlashCommand struct {
	User    string
	Channel string
	// Command is the command as registered, "/askrepo" when empty.
	Command string
	Text    string
}

// SendSlashCommand sends the slash_commands envelope Slack delivers for c,
// with a fresh trigger_id and a response_url that points back at the fake.
// It returns the envelope ID (for WaitAck or Redeliver) and the trigger_id,
// which is what tells one invocation from another.
func (s *Server) SendSlashCommand(c SlashCommand) (envelopeID, triggerID string) {
	if c.Command == "" {
		c.Command = "/askrepo"
	}
	n, trigger := s.nextTrigger(c.User)
	payload := map[string]any{
		"token":                 "fake-verification-token",
		"team_id":               s.cfg.TeamID,
		"team_domain":           s.cfg.TeamName,
		"channel_id":            c.Channel,
		"channel_name":          s.channelName(c.Channel),
		"user_id":               c.User,
		"user_name":             c.User,
		"command":               c.Command,
		"text":                  c.Text,
		"api_app_id":            s.cfg.AppID,
		"is_enterprise_install": false,
		"response_url":          s.URL + "/response/" + strconv.Itoa(n),
		"trigger_id":            trigger,
	}
	return s.sendTyped("slash_commands", payload), trigger
}

// AssistantThreadStarted is the event Slack sends when user opens a new
// thread in the app's assistant panel: the thread lives in the DM channel
// dm at threadTS, and contextChannel is the channel the user was viewing
// ("" for none).
func AssistantThreadStarted(user, dm, threadTS, contextChannel string) Event {
	return assistantEvent("assistant_thread_started", user, dm, threadTS, contextChannel)
}

// AssistantThreadContextChanged is the event Slack sends when the user of an
// open panel thread moves to another channel.
func AssistantThreadContextChanged(user, dm, threadTS, contextChannel string) Event {
	return assistantEvent("assistant_thread_context_changed", user, dm, threadTS, contextChannel)
}

func assistantEvent(typ, user, dm, threadTS, contextChannel string) Event {
	ctx := map[string]any{}
	if contextChannel != "" {
		ctx = map[string]any{"channel_id": contextChannel, "team_id": DefaultTeamID, "enterprise_id": ""}
	}
	return Event{Inner: map[string]any{
		"type": typ,
		"assistant_thread": map[string]any{
			"user_id":    user,
			"context":    ctx,
			"channel_id": dm,
			"thread_ts":  threadTS,
		},
		"event_ts": threadTS,
	}}
}

// AppHomeOpened is the event Slack sends when user opens the app's Home tab.
func AppHomeOpened(user, dm string) Event {
	return Event{Inner: map[string]any{
		"type":    "app_home_opened",
		"user":    user,
		"channel": dm,
		"tab":     "home",
	}}
}

// MessageShortcut is a person choosing the app's shortcut on a message.
type MessageShortcut struct {
	User       string
	Channel    string
	MessageTS  string
	CallbackID string
}

// SendMessageShortcut sends the message_action interaction for m, carrying
// the message as stored (its text, its thread), a trigger_id for views.open
// and a response_url. It returns the envelope ID and the trigger_id.
func (s *Server) SendMessageShortcut(m MessageShortcut) (envelopeID, triggerID string) {
	n, trigger := s.nextTrigger(m.User)
	s.mu.Lock()
	msg := map[string]any{"type": "message", "ts": m.MessageTS}
	if stored, ok := s.st.Message(m.Channel, m.MessageTS); ok {
		msg = s.wireMessage(stored)
	}
	s.mu.Unlock()
	payload := map[string]any{
		"type":                  "message_action",
		"token":                 "fake-verification-token",
		"action_ts":             s.NextTS(),
		"team":                  map[string]any{"id": s.cfg.TeamID, "domain": s.cfg.TeamName},
		"user":                  map[string]any{"id": m.User, "username": m.User, "name": m.User, "team_id": s.cfg.TeamID},
		"channel":               map[string]any{"id": m.Channel, "name": s.channelName(m.Channel)},
		"is_enterprise_install": false,
		"callback_id":           m.CallbackID,
		"trigger_id":            trigger,
		"response_url":          s.URL + "/response/" + strconv.Itoa(n),
		"message_ts":            m.MessageTS,
		"message":               msg,
	}
	return s.SendInteraction(payload), trigger
}

// SubmitViewAs sends the view_submission interaction of the modal the bot
// opened with views.open (found by its view ID), as user submits it with
// values: block_id → action_id → the plain_text_input's value. user may be
// another than the one the modal opened for, as a forged submission would
// be. It fails if no such view was opened.
func (s *Server) SubmitViewAs(user, viewID string, values map[string]map[string]string) (string, error) {
	var inputs []Input
	for block, actions := range values {
		for action, value := range actions {
			inputs = append(inputs, Input{BlockID: block, ActionID: action, Value: value})
		}
	}
	p, err := s.submitPayload(user, viewID, inputs)
	if err != nil {
		return "", err
	}
	return s.SendInteraction(p), nil
}

// nextTrigger hands out a response_url number and a trigger_id for user.
func (s *Server) nextTrigger(user string) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clickSeq++
	id := "trigger-" + strconv.Itoa(s.clickSeq)
	s.issueTriggerLocked(id, user)
	return s.clickSeq, id
}

// sendTyped sends payload in an envelope of type typ that accepts a
// response payload, as Slack frames slash commands and interactions.
func (s *Server) sendTyped(typ string, payload map[string]any) string {
	s.mu.Lock()
	id := s.newEnvelopeIDLocked()
	data, err := json.Marshal(map[string]any{
		"envelope_id":              id,
		"type":                     typ,
		"accepts_response_payload": true,
		"payload":                  payload,
	})
	if err != nil {
		s.mu.Unlock()
		panic(fmt.Sprintf("slacktest: %s payload must be JSON-encodable: %v", typ, err))
	}
	f := s.addEnvelopeLocked(Envelope{ID: id, Type: typ, Frame: data})
	s.mu.Unlock()
	s.deliver(f)
	return id
}

// openAssistantThreadLocked stores the root of the thread an
// assistant_thread_started event opens, as Slack keeps it in the DM (subtype
// assistant_app_thread), so conversations.replies finds the thread.
func (s *Server) openAssistantThreadLocked(in map[string]any) {
	if in["type"] != "assistant_thread_started" {
		return
	}
	th, _ := in["assistant_thread"].(map[string]any)
	dm, _ := th["channel_id"].(string)
	ts, _ := th["thread_ts"].(string)
	user, _ := th["user_id"].(string)
	if dm == "" || ts == "" {
		return
	}
	if _, ok := s.st.Message(dm, ts); ok {
		return
	}
	s.observeTSLocked(ts)
	s.st.Messages = append(s.st.Messages, Message{
		Channel: dm, TS: ts, User: user, Subtype: "assistant_app_thread", Text: "New chat", Via: "event", At: time.Now(),
	})
}
