package slacktest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Block is one Block Kit block as decoded from the request, kept generic so that
// assertions do not depend on which block types slack-go knows how to parse.
type Block = map[string]any

// Call is one Web API request as the fake saw it.
type Call struct {
	Method string
	// Params holds form fields, query parameters, or the top-level fields of a JSON
	// body (non-string JSON values are re-encoded as JSON text).
	Params url.Values
	// Blocks is the decoded "blocks" parameter, nil when absent or not valid JSON.
	Blocks []Block
	// Token is the token the request authenticated with (form field or Bearer).
	Token string
	At    time.Time
	// Status is the HTTP status the fake answered with; 0 while the call is held
	// (see Server.Hold) or if the client gave up waiting.
	Status int
	// Error is the Slack error code returned ("" when ok).
	Error string
	// Injected is true when the answer came from FailNext or FailAlways.
	Injected bool
}

// Edit is a previous version of a message, kept when chat.update or a
// message_changed event replaces it.
type Edit struct {
	Text   string
	Blocks []Block
	At     time.Time
}

// Message is one message in the fake workspace: posted by the bot through the Web
// API, or by a user through an event sent with Server.SendEvent.
type Message struct {
	Channel string
	TS      string
	// ThreadTS is the parent's ts for a reply, "" for a top-level message.
	ThreadTS string
	User     string
	// BotID is set for messages posted by a bot (the fake's own bot for Web API posts).
	BotID        string
	Subtype      string
	Text         string
	MarkdownText string
	Blocks       []Block
	// Metadata is the message's metadata (event_type, event_payload) as
	// posted or last updated; conversations.replies returns it when asked
	// with include_all_metadata.
	Metadata map[string]any
	// Edits lists replaced versions, oldest first; Text and Blocks are the current one.
	Edits []Edit
	// Reactions lists the emoji names the bot currently has on the message, in order added.
	Reactions []string
	// Ephemeral messages (chat.postEphemeral) are visible only to Recipient and never
	// appear in threads or conversations.replies.
	Ephemeral bool
	Recipient string
	Deleted   bool
	// Streaming is set while a message started with chat.startStream
	// takes appends; Chunks are the chunks it was sent, in order, and
	// TaskDisplayMode the mode it was started with. MarkdownText holds
	// its text as streamed so far.
	Streaming       bool
	Chunks          []Block
	TaskDisplayMode string
	// Via is the Web API method or "event" that created the message.
	Via string
	At  time.Time
}

// IsReply reports whether the message is a reply inside a thread.
func (m Message) IsReply() bool { return m.ThreadTS != "" && m.ThreadTS != m.TS }

// BlockTypes lists the "type" of each block, handy for golden-free assertions.
func (m Message) BlockTypes() []string {
	out := make([]string, 0, len(m.Blocks))
	for _, b := range m.Blocks {
		t, _ := b["type"].(string)
		out = append(out, t)
	}
	return out
}

// AllText returns the message text followed by every "text" string found anywhere in
// its blocks, newline-separated, so a test can assert that content reached Slack
// without caring whether it went into the fallback text, a section or a context block.
func (m Message) AllText() string {
	parts := []string{}
	if m.Text != "" {
		parts = append(parts, m.Text)
	}
	if m.MarkdownText != "" {
		parts = append(parts, m.MarkdownText)
	}
	for _, b := range m.Blocks {
		collectText(b, &parts)
	}
	return strings.Join(parts, "\n")
}

func collectText(v any, parts *[]string) {
	switch v := v.(type) {
	case map[string]any:
		if s, ok := v["text"].(string); ok && s != "" {
			*parts = append(*parts, s)
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			if k != "text" {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		if t, ok := v["text"].(map[string]any); ok {
			collectText(t, parts)
		}
		for _, k := range keys {
			collectText(v[k], parts)
		}
	case []any:
		for _, e := range v {
			collectText(e, parts)
		}
	}
}

// Status is one assistant.threads.setStatus call.
type Status struct {
	Channel         string
	ThreadTS        string
	Status          string
	LoadingMessages []string
	At              time.Time
}

// Envelope is one Socket Mode frame the fake built or was asked to send.
type Envelope struct {
	ID string
	// Type is the envelope type: "events_api", "interactive", or whatever a raw
	// frame declared ("" if it could not be parsed).
	Type string
	// EventID is the Events API event_id (events_api only).
	EventID      string
	RetryAttempt int
	Frame        json.RawMessage
	// Conn is the connection the frame was written to; 0 while it waits for one.
	Conn   int
	SentAt time.Time
	Acked  bool
}

// Ack is one frame the client wrote on the socket. Acks of envelopes the fake sent
// carry the latency between writing the envelope and reading the ack.
type Ack struct {
	EnvelopeID string
	Payload    json.RawMessage
	Conn       int
	At         time.Time
	// Latency is zero when the envelope is unknown (Known false).
	Latency time.Duration
	Known   bool
	// Raw is the frame exactly as received.
	Raw json.RawMessage
}

// Conn describes one Socket Mode connection, live or closed.
type Conn struct {
	ID     int
	Ticket string
	Opened time.Time
	// Closed is zero while the connection is live.
	Closed time.Time
	// Draining is set once a disconnect frame was sent; no new envelopes go there.
	Draining bool
	Pings    int
	Pongs    int
}

// Live reports whether the connection is still open.
func (c Conn) Live() bool { return c.Closed.IsZero() }

// State is a snapshot of everything the fake recorded. Predicates given to
// Server.WaitFor receive a private copy, so they may keep it.
type State struct {
	Calls     []Call
	Messages  []Message
	Statuses  []Status
	Sessions  []SessionStatus
	Envelopes []Envelope
	Acks      []Ack
	Conns     []Conn
	// Views are the views opened and published; Prompts the suggested
	// prompts set in assistant threads.
	Views   []View
	Prompts []Prompts
	// Tickets counts apps.connections.open successes.
	Tickets int
}

// CallsTo returns the calls to method, or all calls when method is "".
func (st *State) CallsTo(method string) []Call {
	var out []Call
	for _, c := range st.Calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Live counts open Socket Mode connections.
func (st *State) Live() int {
	n := 0
	for _, c := range st.Conns {
		if c.Live() {
			n++
		}
	}
	return n
}

// Message finds a message by channel and ts, ephemeral or deleted ones included.
func (st *State) Message(channel, ts string) (Message, bool) {
	for _, m := range st.Messages {
		if m.Channel == channel && m.TS == ts {
			return m, true
		}
	}
	return Message{}, false
}

// Thread returns the root message (if known) and all replies of the thread rooted at
// rootTS, in ts order, leaving out deleted and ephemeral messages: what a person in the
// channel sees.
func (st *State) Thread(channel, rootTS string) []Message {
	var out []Message
	for _, m := range st.Messages {
		if m.Channel != channel || m.Deleted || m.Ephemeral {
			continue
		}
		if m.TS == rootTS || m.ThreadTS == rootTS {
			out = append(out, m)
		}
	}
	sortByTS(out)
	return out
}

// BotMessages returns the visible messages the bot posted through the Web API in
// channel with the given thread_ts ("" means top-level), in ts order. The root of the
// thread is not included.
func (st *State) BotMessages(channel, threadTS string, botID string) []Message {
	var out []Message
	for _, m := range st.Messages {
		if m.Channel != channel || m.Deleted || m.Ephemeral || m.BotID != botID || m.Via == "event" {
			continue
		}
		if m.ThreadTS == threadTS && m.TS != threadTS {
			out = append(out, m)
		}
	}
	sortByTS(out)
	return out
}

// Ack returns the first ack of the envelope.
func (st *State) Ack(envelopeID string) (Ack, bool) {
	for _, a := range st.Acks {
		if a.EnvelopeID == envelopeID {
			return a, true
		}
	}
	return Ack{}, false
}

func (st *State) summary() string {
	return fmt.Sprintf("%d calls, %d messages, %d envelopes, %d acks, %d/%d connections live",
		len(st.Calls), len(st.Messages), len(st.Envelopes), len(st.Acks), st.Live(), len(st.Conns))
}

// clone copies st deeply enough that later appends and in-place edits by the server
// never race with a reader of the copy. Block maps are never mutated after creation,
// so they are shared.
func (st *State) clone() *State {
	c := &State{
		Calls:     slices.Clone(st.Calls),
		Messages:  slices.Clone(st.Messages),
		Statuses:  slices.Clone(st.Statuses),
		Sessions:  slices.Clone(st.Sessions),
		Envelopes: slices.Clone(st.Envelopes),
		Acks:      slices.Clone(st.Acks),
		Conns:     slices.Clone(st.Conns),
		Tickets:   st.Tickets,
		Views:     slices.Clone(st.Views),
		Prompts:   slices.Clone(st.Prompts),
	}
	for i := range c.Messages {
		c.Messages[i].Edits = slices.Clone(c.Messages[i].Edits)
		c.Messages[i].Reactions = slices.Clone(c.Messages[i].Reactions)
		c.Messages[i].Chunks = slices.Clone(c.Messages[i].Chunks)
	}
	return c
}

func sortByTS(ms []Message) {
	slices.SortStableFunc(ms, func(a, b Message) int {
		return compareTS(a.TS, b.TS)
	})
}

// tsMicros turns "1700000000.000100" into microseconds; ok is false for anything else.
func tsMicros(ts string) (int64, bool) {
	sec, frac, found := strings.Cut(ts, ".")
	if !found || len(frac) == 0 || len(frac) > 6 {
		return 0, false
	}
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, false
	}
	frac += strings.Repeat("0", 6-len(frac))
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, false
	}
	return s*1_000_000 + f, true
}

func formatTS(micros int64) string {
	return fmt.Sprintf("%d.%06d", micros/1_000_000, micros%1_000_000)
}

func compareTS(a, b string) int {
	am, aok := tsMicros(a)
	bm, bok := tsMicros(b)
	if aok && bok {
		switch {
		case am < bm:
			return -1
		case am > bm:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}
