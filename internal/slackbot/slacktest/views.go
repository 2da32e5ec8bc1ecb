package slacktest

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Limits Slack documents for views and the assistant panel.
const (
	maxViewBlocks       = 100 // modals and Home tabs
	maxModalTitle       = 24  // characters of a modal's title
	maxPrivateMetadata  = 3000
	maxSuggestedPrompts = 4
)

// View is a view the bot opened (views.open) or published (views.publish).
type View struct {
	ID   string
	Type string // "modal" or "home"
	// User is who sees it: the Home tab's user_id, or the user of the
	// trigger a modal was opened with.
	User            string
	CallbackID      string
	PrivateMetadata string
	Blocks          []Block
	Raw             map[string]any
}

func (v View) wire() map[string]any {
	out := map[string]any{}
	for k, val := range v.Raw {
		out[k] = val
	}
	out["id"] = v.ID
	out["team_id"] = DefaultTeamID
	out["type"] = v.Type
	out["hash"] = "hash-" + v.ID
	return out
}

// AllText is every text of the view's blocks, newline-separated.
func (v View) AllText() string { return Message{Blocks: v.Blocks}.AllText() }

// Views returns the views opened and published, in order.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]View(nil), s.st.Views...)
}

// readView decodes and checks the "view" parameter as Slack does.
func (s *Server) readView(c *Call, typ string) (View, apiError) {
	var raw map[string]any
	if err := json.Unmarshal([]byte(c.Params.Get("view")), &raw); err != nil {
		return View{}, "invalid_arguments"
	}
	str := func(k string) string { v, _ := raw[k].(string); return v }
	v := View{Type: str("type"), CallbackID: str("callback_id"), PrivateMetadata: str("private_metadata"), Raw: raw}
	if v.Type != typ {
		return View{}, "invalid_arguments"
	}
	v.Blocks = toBlocks(raw["blocks"])
	if len(v.Blocks) > maxViewBlocks || utf8.RuneCountInString(v.PrivateMetadata) > maxPrivateMetadata {
		return View{}, "invalid_arguments"
	}
	for _, b := range v.Blocks {
		if t, _ := b["type"].(string); t == "" {
			return View{}, "invalid_arguments"
		}
	}
	if typ == "modal" {
		title, _ := raw["title"].(map[string]any)
		text, _ := title["text"].(string)
		if text == "" || utf8.RuneCountInString(text) > maxModalTitle {
			return View{}, "invalid_arguments"
		}
	}
	s.viewSeq++
	v.ID = "V" + strconv.Itoa(s.viewSeq)
	return v, ""
}

func (s *Server) viewsPublish(c *Call) (map[string]any, apiError) {
	user := c.Params.Get("user_id")
	if user == "" {
		return nil, "user_not_found"
	}
	v, code := s.readView(c, "home")
	if code != "" {
		return nil, code
	}
	v.User = user
	s.st.Views = append(s.st.Views, v)
	return map[string]any{"view": v.wire()}, ""
}

func (s *Server) viewsOpen(c *Call) (map[string]any, apiError) {
	trigger := c.Params.Get("trigger_id")
	user, ok := s.triggers[trigger]
	if !ok {
		return nil, "invalid_trigger_id"
	}
	if s.usedTriggers[trigger] {
		return nil, "expired_trigger_id"
	}
	v, code := s.readView(c, "modal")
	if code != "" {
		return nil, code
	}
	s.usedTriggers[trigger] = true
	v.User = user
	s.st.Views = append(s.st.Views, v)
	s.views[v.ID] = v
	return map[string]any{"view": v.wire()}, ""
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
