package slacktest

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultStreamMaxAge is how long the fake keeps a streamed message open
// before it answers message_not_in_streaming_state, as Slack closes streams
// on its own after about five minutes.
const DefaultStreamMaxAge = 5 * time.Minute

// maxChunkDetail is Slack's limit on a task_update chunk's details and output.
const maxChunkDetail = 256

// WithStreamMaxAge sets how long a streamed message accepts appends; a test
// sets it short to see the bot continue a stream Slack closed on its own.
func WithStreamMaxAge(d time.Duration) Option {
	return func(c *Config) { c.StreamMaxAge = d }
}

// Task is a task card as a streamed message shows it: the task_update
// chunks of one id merged, later fields replacing earlier ones and details
// appended, as Slack renders them.
type Task struct {
	ID, Title, Status, Details, Output string
	Sources                            []map[string]any
	// Statuses lists every status the task was sent with, in order.
	Statuses []string
}

// Tasks merges the message's task_update chunks by id, in first-seen order.
func (m Message) Tasks() []Task {
	var out []Task
	for _, c := range m.Chunks {
		if c["type"] != "task_update" {
			continue
		}
		id, _ := c["id"].(string)
		i := slices.IndexFunc(out, func(t Task) bool { return t.ID == id })
		if i < 0 {
			out = append(out, Task{ID: id})
			i = len(out) - 1
		}
		t := &out[i]
		if s, _ := c["title"].(string); s != "" {
			t.Title = s
		}
		if s, _ := c["status"].(string); s != "" {
			t.Status = s
			t.Statuses = append(t.Statuses, s)
		}
		if s, _ := c["details"].(string); s != "" {
			t.Details += s
		}
		if s, _ := c["output"].(string); s != "" {
			t.Output = s
		}
		if srcs, ok := c["sources"].([]any); ok {
			for _, s := range srcs {
				if sm, ok := s.(map[string]any); ok {
					t.Sources = append(t.Sources, sm)
				}
			}
		}
	}
	return out
}

// streamChunks decodes and checks the chunks parameter: each a known type
// with the fields Slack requires. It returns the chunks and the markdown
// text they carry.
func streamChunks(raw string) ([]Block, string, apiError) {
	if raw == "" {
		return nil, "", ""
	}
	var chunks []Block
	if err := json.Unmarshal([]byte(raw), &chunks); err != nil {
		return nil, "", "invalid_chunks"
	}
	var text strings.Builder
	for _, c := range chunks {
		switch c["type"] {
		case "markdown_text":
			s, ok := c["text"].(string)
			if !ok {
				return nil, "", "invalid_chunks"
			}
			text.WriteString(s)
		case "task_update":
			id, _ := c["id"].(string)
			title, _ := c["title"].(string)
			if id == "" || title == "" {
				return nil, "", "invalid_chunks"
			}
			switch c["status"] {
			case nil, "pending", "in_progress", "complete", "error":
			default:
				return nil, "", "invalid_chunks"
			}
			for _, k := range []string{"details", "output"} {
				if s, _ := c[k].(string); utf8.RuneCountInString(s) > maxChunkDetail {
					return nil, "", "invalid_chunks"
				}
			}
		case "plan_update":
			if s, _ := c["title"].(string); s == "" {
				return nil, "", "invalid_chunks"
			}
		case "blocks":
			if bs, ok := c["blocks"].([]any); !ok || len(bs) > maxBlocks {
				return nil, "", "invalid_chunks"
			}
		default:
			return nil, "", "invalid_chunks"
		}
	}
	return chunks, text.String(), ""
}

// streamContent applies what an append (or a start or stop) carries to m:
// markdown_text and chunks, within the message's 12,000 characters.
func streamContent(m *Message, c *Call) apiError {
	p := c.Params
	if p.Has("text") {
		return "markdown_text_conflict"
	}
	chunks, chunkText, code := streamChunks(p.Get("chunks"))
	if code != "" {
		return code
	}
	md := p.Get("markdown_text")
	if md != "" && chunks != nil {
		return "markdown_text_conflict"
	}
	add := md + chunkText
	if utf8.RuneCountInString(m.MarkdownText)+utf8.RuneCountInString(add) > maxMarkdownText {
		return "msg_too_long"
	}
	m.MarkdownText += add
	m.Chunks = append(slices.Clone(m.Chunks), chunks...)
	return ""
}

func (s *Server) startStream(c *Call) (map[string]any, apiError) {
	p := c.Params
	channel := p.Get("channel")
	if channel == "" {
		return nil, "channel_not_found"
	}
	if p.Get("thread_ts") == "" {
		return nil, "invalid_arguments"
	}
	// Outside a DM Slack must know whom the stream is for.
	if !strings.HasPrefix(channel, "D") && (p.Get("recipient_user_id") == "" || p.Get("recipient_team_id") == "") {
		return nil, "missing_recipient"
	}
	switch p.Get("task_display_mode") {
	case "", "timeline", "plan":
	default:
		return nil, "invalid_arguments"
	}
	m := s.botMessageLocked(c, channel)
	m.Streaming = true
	m.Recipient = p.Get("recipient_user_id")
	m.TaskDisplayMode = p.Get("task_display_mode")
	if code := streamContent(&m, c); code != "" {
		return nil, code
	}
	s.st.Messages = append(s.st.Messages, m)
	return map[string]any{"channel": channel, "ts": m.TS}, ""
}

// streamingLocked finds the bot's open stream ts in channel, closing it
// first if it is older than the configured age.
func (s *Server) streamingLocked(c *Call) (*Message, apiError) {
	m, code := s.ownMessageLocked(c.Params.Get("channel"), c.Params.Get("ts"), "message_not_owned_by_app")
	if code != "" {
		return nil, code
	}
	if m.Streaming && c.At.Sub(m.At) > s.streamMaxAge() {
		m.Streaming = false
	}
	if !m.Streaming {
		return nil, "message_not_in_streaming_state"
	}
	return m, ""
}

func (s *Server) streamMaxAge() time.Duration {
	if s.cfg.StreamMaxAge > 0 {
		return s.cfg.StreamMaxAge
	}
	return DefaultStreamMaxAge
}

func (s *Server) appendStream(c *Call) (map[string]any, apiError) {
	m, code := s.streamingLocked(c)
	if code != "" {
		return nil, code
	}
	if c.Params.Get("markdown_text") == "" && c.Params.Get("chunks") == "" {
		return nil, "no_text"
	}
	if code := streamContent(m, c); code != "" {
		return nil, code
	}
	return map[string]any{"channel": m.Channel, "ts": m.TS}, ""
}

func (s *Server) stopStream(c *Call) (map[string]any, apiError) {
	m, code := s.streamingLocked(c)
	if code != "" {
		return nil, code
	}
	if code := validateBlocks(c.Params.Get("blocks"), c); code != "" {
		return nil, code
	}
	if code := streamContent(m, c); code != "" {
		return nil, code
	}
	m.Streaming = false
	m.Blocks = c.Blocks
	return map[string]any{"channel": m.Channel, "ts": m.TS, "message": s.wireMessage(*m)}, ""
}

// CloseStream ends the stream ts in channel from Slack's side, as its own
// time limit does: later appends get message_not_in_streaming_state.
func (s *Server) CloseStream(channel, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.st.Messages {
		if m := &s.st.Messages[i]; m.Channel == channel && m.TS == ts {
			m.Streaming = false
		}
	}
	s.notifyLocked()
}

// SessionStatus is one agents.sessions.setStatus call.
type SessionStatus struct {
	Channel, ThreadTS, Status, User string
	At                              time.Time
}

func (s *Server) setSessionStatus(c *Call) (map[string]any, apiError) {
	p := c.Params
	switch p.Get("status") {
	case "active", "processing", "suspended", "closed":
	default:
		return nil, "invalid_arguments"
	}
	if p.Get("channel_id") == "" || p.Get("thread_ts") == "" {
		return nil, "invalid_arguments"
	}
	st := SessionStatus{Channel: p.Get("channel_id"), ThreadTS: p.Get("thread_ts"), Status: p.Get("status"), User: p.Get("initiator_user_id"), At: c.At}
	s.st.Sessions = append(s.st.Sessions, st)
	return map[string]any{"status": st.Status, "agent_status": st.Status}, ""
}

// SessionStopped is the agent_session_stopped event Slack sends when user
// presses the stop control of the agent session in channel's thread
// threadTS, with the streams it halted.
func SessionStopped(channel, threadTS, user string, streams ...string) Event {
	if streams == nil {
		streams = []string{} // Slack sends an empty list when no stream was active
	}
	return InnerEvent("agent_session_stopped", map[string]any{
		"channel": channel, "thread_ts": threadTS, "user": user, "event_ts": threadTS, "streaming_message_ts": streams,
	})
}

// AgentSessionStopped does what Slack does when user presses the stop
// control of the agent session in channel's thread threadTS: it halts
// the streams and sends SessionStopped. It returns the envelope ID.
func (s *Server) AgentSessionStopped(channel, threadTS, user string, streams ...string) string {
	s.mu.Lock()
	for i := range s.st.Messages {
		if m := &s.st.Messages[i]; m.Channel == channel && slices.Contains(streams, m.TS) {
			m.Streaming = false
		}
	}
	s.notifyLocked()
	s.mu.Unlock()
	return s.SendEvent(SessionStopped(channel, threadTS, user, streams...))
}
