package slacktest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Slack lets an app open a modal only in answer to a person's action: each
// interaction carries a trigger_id that views.open accepts once, within 3
// seconds of the action. The fake issues one with every click it sends and
// answers views.open as Slack does: invalid_trigger_id for one it never
// issued, exchanged_trigger_id for one already used, expired_trigger_id
// for one older than the trigger window. It keeps each opened view, so a
// test can submit it (SubmitView) as the person would, and each Home tab
// published (views.publish).

// DefaultTriggerTTL is Slack's trigger window.
const DefaultTriggerTTL = 3 * time.Second

// View is a modal the bot opened with views.open, or a Home tab it
// published with views.publish.
type View struct {
	ID        string
	Type      string // "modal" or "home"
	TriggerID string // a modal's
	// User is who sees it: the user the trigger was issued to, for whom a
	// modal opens, or a Home tab's user_id.
	User            string
	CallbackID      string
	PrivateMetadata string
	Blocks          []Block
	// Raw is the view as the bot sent it.
	Raw    map[string]any
	Opened time.Time
}

// AllText is every text of the view's blocks, newline-separated.
func (v View) AllText() string { return Message{Blocks: v.Blocks}.AllText() }

type trigger struct {
	user   string
	issued time.Time
	used   bool
}

type viewStore struct {
	ttl      time.Duration
	triggers map[string]*trigger
}

// viewsLocked makes the view state on first use; callers hold s.mu.
func (s *Server) viewsLocked() *viewStore {
	if s.views == nil {
		s.views = &viewStore{ttl: DefaultTriggerTTL, triggers: map[string]*trigger{}}
	}
	return s.views
}

// issueTriggerLocked records a trigger handed to user with an interaction.
func (s *Server) issueTriggerLocked(id, user string) {
	s.viewsLocked().triggers[id] = &trigger{user: user, issued: time.Now()}
}

// SetTriggerTTL changes the trigger window (DefaultTriggerTTL).
func (s *Server) SetTriggerTTL(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.viewsLocked().ttl = d
}

// ExpireTriggers makes every trigger issued so far expire now, as if the
// bot had taken longer than the window to use it.
func (s *Server) ExpireTriggers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.viewsLocked()
	for _, tr := range vs.triggers {
		tr.issued = time.Now().Add(-vs.ttl - time.Second)
	}
}

// Views returns the modals opened and the Home tabs published so far, in
// order.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]View(nil), s.st.Views...)
}

// Slack's limits on a modal (docs.slack.dev/reference/views/modal-views).
const (
	maxViewTitle    = 24
	maxViewBlocks   = 100
	maxViewMetadata = 3000
	maxCallbackID   = 255
)

func (s *Server) openView(c *Call) (map[string]any, apiError) {
	id := c.Params.Get("trigger_id")
	vs := s.viewsLocked()
	tr := vs.triggers[id]
	switch {
	case id == "" || tr == nil:
		return nil, "invalid_trigger_id"
	case tr.used:
		return nil, "exchanged_trigger_id"
	case time.Since(tr.issued) > vs.ttl:
		return nil, "expired_trigger_id"
	}
	var view map[string]any
	if err := json.Unmarshal([]byte(c.Params.Get("view")), &view); err != nil {
		return nil, "invalid_arguments"
	}
	if code := checkModal(view); code != "" {
		return nil, code
	}
	tr.used = true
	s.viewSeq++
	v := View{
		ID:        "V" + strconv.Itoa(1000+s.viewSeq),
		Type:      "modal",
		Blocks:    toBlocks(view["blocks"]),
		TriggerID: id,
		User:      tr.user,
		Raw:       view,
		Opened:    time.Now(),
	}
	v.CallbackID, _ = view["callback_id"].(string)
	v.PrivateMetadata, _ = view["private_metadata"].(string)
	s.st.Views = append(s.st.Views, v)
	return map[string]any{"view": s.wireView(v, map[string]any{})}, ""
}

// checkModal answers as views.open does for a view it refuses.
func checkModal(view map[string]any) apiError {
	if view["type"] != "modal" {
		return "invalid_arguments"
	}
	title, _ := view["title"].(map[string]any)
	text, _ := title["text"].(string)
	blocks, _ := view["blocks"].([]any)
	meta, _ := view["private_metadata"].(string)
	cb, _ := view["callback_id"].(string)
	switch {
	case text == "" || utf8.RuneCountInString(text) > maxViewTitle:
		return "invalid_arguments"
	case len(blocks) == 0 || len(blocks) > maxViewBlocks:
		return "invalid_arguments"
	case len(meta) > maxViewMetadata || len(cb) > maxCallbackID:
		return "invalid_arguments"
	}
	for _, b := range blocks {
		if m, _ := b.(map[string]any); m["type"] == "input" && view["submit"] == nil {
			return "invalid_arguments" // a modal with inputs needs a submit button
		}
	}
	return ""
}

// wireView is v as Slack sends it back: in views.open's answer, and in a
// view_submission with the person's input in state.
func (s *Server) wireView(v View, values map[string]any) map[string]any {
	out := map[string]any{
		"id": v.ID, "team_id": s.cfg.TeamID, "type": v.Type,
		"callback_id": v.CallbackID, "private_metadata": v.PrivateMetadata,
		"external_id": "", "hash": "h" + v.ID, "app_id": s.cfg.AppID, "bot_id": s.cfg.BotID,
		"root_view_id": v.ID, "previous_view_id": nil,
		"clear_on_close": false, "notify_on_close": false,
		"state": map[string]any{"values": values},
	}
	for _, k := range []string{"title", "submit", "close", "blocks"} {
		if x, ok := v.Raw[k]; ok {
			out[k] = x
		}
	}
	return out
}

// Input is what a person entered in one element of a modal: the value of
// a text input, or the value of the option they picked.
type Input struct {
	BlockID, ActionID, Value string
}

// SubmitView sends the view_submission Slack delivers when the person the
// modal viewID was opened for presses its submit button after entering
// inputs. Each input is shaped as its element's type reports it (a
// plain_text_input's value, a radio_buttons or static_select's
// selected_option with the option's text from the view). It returns the
// envelope ID.
func (s *Server) SubmitView(viewID string, inputs ...Input) (string, error) {
	p, err := s.submitPayload("", viewID, inputs)
	if err != nil {
		return "", err
	}
	return s.SendInteraction(p), nil
}

// SubmitViewTo is SubmitView on connection conn.
func (s *Server) SubmitViewTo(conn int, viewID string, inputs ...Input) (string, error) {
	p, err := s.submitPayload("", viewID, inputs)
	if err != nil {
		return "", err
	}
	return s.SendInteractionTo(conn, p)
}

// submitPayload is the view_submission of modal viewID with inputs, by
// user (the one it opened for when empty).
func (s *Server) submitPayload(user, viewID string, inputs []Input) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var v *View
	for i := range s.st.Views {
		if s.st.Views[i].ID == viewID && s.st.Views[i].Type == "modal" {
			v = &s.st.Views[i]
		}
	}
	if v == nil {
		return nil, fmt.Errorf("slacktest: no view %s was opened", viewID)
	}
	if user == "" {
		user = v.User
	}
	values := map[string]any{}
	for _, in := range inputs {
		el, err := findElement(v.Raw, in.BlockID, in.ActionID)
		if err != nil {
			return nil, err
		}
		typ, _ := el["type"].(string)
		state := map[string]any{"type": typ}
		switch typ {
		case "plain_text_input":
			state["value"] = in.Value
		case "radio_buttons", "static_select":
			opt := findOption(el, in.Value)
			if opt == nil {
				return nil, fmt.Errorf("slacktest: %s/%s has no option %q", in.BlockID, in.ActionID, in.Value)
			}
			state["selected_option"] = opt
		default:
			return nil, fmt.Errorf("slacktest: cannot enter a value in a %s element", typ)
		}
		blk, _ := values[in.BlockID].(map[string]any)
		if blk == nil {
			blk = map[string]any{}
			values[in.BlockID] = blk
		}
		blk[in.ActionID] = state
	}
	s.clickSeq++
	tid := "trigger-" + strconv.Itoa(s.clickSeq)
	s.issueTriggerLocked(tid, user)
	return map[string]any{
		"type":                  "view_submission",
		"team":                  map[string]any{"id": s.cfg.TeamID, "domain": s.cfg.TeamName},
		"user":                  map[string]any{"id": user, "username": user, "name": user, "team_id": s.cfg.TeamID},
		"api_app_id":            s.cfg.AppID,
		"token":                 "fake-verification-token",
		"trigger_id":            tid,
		"view":                  s.wireView(*v, values),
		"response_urls":         []any{},
		"is_enterprise_install": false,
		"enterprise":            nil,
	}, nil
}

// findElement finds the element actionID of the input block blockID.
func findElement(view map[string]any, blockID, actionID string) (map[string]any, error) {
	blocks, _ := view["blocks"].([]any)
	for _, b := range blocks {
		m, _ := b.(map[string]any)
		if m["type"] != "input" || m["block_id"] != blockID {
			continue
		}
		if el, _ := m["element"].(map[string]any); el["action_id"] == actionID {
			return el, nil
		}
	}
	return nil, fmt.Errorf("slacktest: the view has no input %s/%s", blockID, actionID)
}

func findOption(el map[string]any, value string) map[string]any {
	opts, _ := el["options"].([]any)
	for _, o := range opts {
		if m, _ := o.(map[string]any); m["value"] == value {
			return m
		}
	}
	return nil
}

// maxSuggestedPrompts is how many prompts an assistant thread may suggest.
const maxSuggestedPrompts = 4

// viewsPublish publishes a Home tab, checked as Slack checks one.
func (s *Server) viewsPublish(c *Call) (map[string]any, apiError) {
	user := c.Params.Get("user_id")
	if user == "" {
		return nil, "user_not_found"
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(c.Params.Get("view")), &raw); err != nil || raw["type"] != "home" {
		return nil, "invalid_arguments"
	}
	v := View{Type: "home", User: user, Raw: raw, Blocks: toBlocks(raw["blocks"]), Opened: time.Now()}
	v.CallbackID, _ = raw["callback_id"].(string)
	v.PrivateMetadata, _ = raw["private_metadata"].(string)
	if len(v.Blocks) > maxViewBlocks || utf8.RuneCountInString(v.PrivateMetadata) > maxViewMetadata {
		return nil, "invalid_arguments"
	}
	for _, b := range v.Blocks {
		if t, _ := b["type"].(string); t == "" {
			return nil, "invalid_arguments"
		}
	}
	s.viewSeq++
	v.ID = "V" + strconv.Itoa(1000+s.viewSeq)
	s.st.Views = append(s.st.Views, v)
	return map[string]any{"view": s.wireView(v, map[string]any{})}, ""
}

// Prompts is one assistant.threads.setSuggestedPrompts call that succeeded.
type Prompts struct {
	Channel, ThreadTS, Title string
	Prompts                  []struct{ Title, Message string }
}

func (s *Server) setSuggestedPrompts(c *Call) (map[string]any, apiError) {
	p := c.Params
	if p.Get("channel_id") == "" {
		return nil, "channel_not_found"
	}
	out := Prompts{Channel: p.Get("channel_id"), ThreadTS: p.Get("thread_ts"), Title: p.Get("title")}
	if json.Unmarshal([]byte(p.Get("prompts")), &out.Prompts) != nil || len(out.Prompts) == 0 || len(out.Prompts) > maxSuggestedPrompts {
		return nil, "invalid_arguments"
	}
	for _, pr := range out.Prompts {
		if pr.Title == "" || pr.Message == "" {
			return nil, "invalid_arguments"
		}
	}
	s.st.Prompts = append(s.st.Prompts, out)
	return map[string]any{}, ""
}

func (s *Server) setTitle(c *Call) (map[string]any, apiError) {
	p := c.Params
	if p.Get("channel_id") == "" {
		return nil, "channel_not_found"
	}
	if p.Get("thread_ts") == "" || p.Get("title") == "" {
		return nil, "invalid_arguments"
	}
	return map[string]any{}, ""
}
