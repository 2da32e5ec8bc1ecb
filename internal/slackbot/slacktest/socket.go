package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// writeTimeout bounds every socket write, so a client that stopped reading cannot
// wedge a test forever.
const writeTimeout = 5 * time.Second

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com; the fake serves any origin.
	CheckOrigin: func(*http.Request) bool { return true },
}

// wsConn is one accepted Socket Mode connection. gorilla allows one writer at a time,
// so writes take writeMu; PINGs use WriteControl, which gorilla allows concurrently.
type wsConn struct {
	id      int
	ws      *websocket.Conn
	writeMu sync.Mutex
	done    chan struct{}
	once    sync.Once
}

func (c *wsConn) write(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.ws.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// close drops the TCP connection without a close frame, like a network failure.
func (c *wsConn) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

func (c *wsConn) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// outFrame is an envelope waiting to be written; env indexes State.Envelopes.
type outFrame struct {
	env  int
	data []byte
}

func (s *Server) connLocked(id int) *Conn {
	for i := range s.st.Conns {
		if s.st.Conns[i].ID == id {
			return &s.st.Conns[i]
		}
	}
	return nil
}

// serveSocket accepts a websocket dialled with a ticket from apps.connections.open.
// Tickets are single-use, as on Slack.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	if !s.tickets[ticket] {
		s.mu.Unlock()
		http.Error(w, "unknown or already used ticket; call apps.connections.open for a new one", http.StatusUnauthorized)
		return
	}
	delete(s.tickets, ticket)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.log.Debug("websocket upgrade failed", "error", err)
		return
	}
	c := &wsConn{ws: ws, done: make(chan struct{})}
	if !s.register(c, ticket) {
		return
	}
	if s.cfg.PingInterval > 0 {
		s.wg.Go(func() { s.ping(c) })
	}
	s.read(c)
}

// register sends hello, makes c eligible for envelopes and flushes the envelopes that
// were sent while no connection was up. Holding sendMu keeps any envelope from
// overtaking hello or the queued ones.
func (s *Server) register(c *wsConn, ticket string) bool {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.close()
		return false
	}
	s.nextConn++
	c.id = s.nextConn
	live := s.st.Live() + 1
	// Visible (to DropConnections, Connections) before hello goes out, because the
	// client may act on hello at once; envelopes still wait for sendMu, held here.
	s.st.Conns = append(s.st.Conns, Conn{ID: c.id, Ticket: ticket, Opened: time.Now()})
	s.conns[c.id] = c
	s.notifyLocked()
	s.mu.Unlock()

	hello, _ := json.Marshal(map[string]any{
		"type":            "hello",
		"num_connections": live,
		"debug_info": map[string]any{
			"host":                        "applink-fake-" + strconv.Itoa(c.id),
			"build_number":                1,
			"approximate_connection_time": 18060,
		},
		"connection_info": map[string]any{"app_id": s.cfg.AppID},
	})
	if err := c.write(hello); err != nil {
		c.close()
		return true // read notices the closed socket and records it
	}

	s.mu.Lock()
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	s.log.Debug("socket connected", "conn", c.id, "ticket", ticket)

	for i, f := range pending {
		if !s.writeFrame(c, f) {
			s.mu.Lock()
			s.pending = append(pending[i:], s.pending...)
			s.mu.Unlock()
			break
		}
	}
	return true
}

// read records every frame the client writes (acks) until the connection ends.
func (s *Server) read(c *wsConn) {
	c.ws.SetPongHandler(func(string) error {
		s.mu.Lock()
		if cn := s.connLocked(c.id); cn != nil {
			cn.Pongs++
		}
		s.notifyLocked()
		s.mu.Unlock()
		return nil
	})
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			s.log.Debug("socket closed", "conn", c.id, "error", err)
			break
		}
		s.recordAck(c.id, data)
	}
	c.close()
	s.mu.Lock()
	if cn := s.connLocked(c.id); cn != nil && cn.Closed.IsZero() {
		cn.Closed = time.Now()
	}
	delete(s.conns, c.id)
	s.notifyLocked()
	s.mu.Unlock()
}

func (s *Server) recordAck(conn int, data []byte) {
	now := time.Now()
	var frame struct {
		EnvelopeID string          `json:"envelope_id"`
		Payload    json.RawMessage `json:"payload"`
	}
	_ = json.Unmarshal(data, &frame)
	a := Ack{EnvelopeID: frame.EnvelopeID, Payload: frame.Payload, Conn: conn, At: now, Raw: json.RawMessage(data)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if frame.EnvelopeID != "" {
		for i := range s.st.Envelopes {
			e := &s.st.Envelopes[i]
			if e.ID == frame.EnvelopeID && !e.SentAt.IsZero() {
				a.Known, a.Latency = true, now.Sub(e.SentAt)
				e.Acked = true
				break
			}
		}
	}
	s.st.Acks = append(s.st.Acks, a)
	s.notifyLocked()
	s.log.Debug("ack", "conn", conn, "envelope", frame.EnvelopeID, "latency", a.Latency)
}

// ping sends WebSocket PINGs, which slack-go's watchdog requires; the first goes out
// at once so a short client interval never sees a zero "last ping".
func (s *Server) ping(c *wsConn) {
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	for n := 1; ; n++ {
		err := c.ws.WriteControl(websocket.PingMessage, []byte("ping-"+strconv.Itoa(n)), time.Now().Add(writeTimeout))
		if err != nil {
			return
		}
		s.mu.Lock()
		if cn := s.connLocked(c.id); cn != nil {
			cn.Pings++
		}
		s.mu.Unlock()
		select {
		case <-c.done:
			return
		case <-t.C:
		}
	}
}

// pickConnLocked chooses a connection for the next envelope round-robin, as Slack
// spreads payloads over an app's connections; draining ones are skipped.
func (s *Server) pickConnLocked() *wsConn {
	ids := make([]int, 0, len(s.conns))
	for id, c := range s.conns {
		if cn := s.connLocked(id); cn == nil || cn.Draining || c.isDone() {
			continue
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Ints(ids)
	s.rr++
	return s.conns[ids[s.rr%len(ids)]]
}

// deliver writes an envelope to some connection, or queues it until one connects,
// just as Slack holds events while an app has no socket.
func (s *Server) deliver(f *outFrame) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	for {
		s.mu.Lock()
		c := s.pickConnLocked()
		if c == nil {
			s.pending = append(s.pending, f)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if s.writeFrame(c, f) {
			return
		}
	}
}

// writeFrame stamps the envelope as sent before writing, so an ack that races back
// finds its send time; on failure it unstamps and closes the connection.
func (s *Server) writeFrame(c *wsConn, f *outFrame) bool {
	s.mu.Lock()
	e := &s.st.Envelopes[f.env]
	e.Conn, e.SentAt = c.id, time.Now()
	s.mu.Unlock()
	if err := c.write(f.data); err != nil {
		s.log.Debug("envelope write failed", "conn", c.id, "error", err)
		c.close()
		s.mu.Lock()
		e := &s.st.Envelopes[f.env]
		e.Conn, e.SentAt = 0, time.Time{}
		s.mu.Unlock()
		return false
	}
	s.mu.Lock()
	s.notifyLocked()
	s.mu.Unlock()
	return true
}

// addEnvelopeLocked records an envelope and returns the frame to deliver.
func (s *Server) addEnvelopeLocked(e Envelope) *outFrame {
	s.st.Envelopes = append(s.st.Envelopes, e)
	s.notifyLocked()
	return &outFrame{env: len(s.st.Envelopes) - 1, data: e.Frame}
}

func (s *Server) newEnvelopeIDLocked() string {
	s.envSeq++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.envSeq)
}

// SendRaw sends frame as is, for envelopes slack-go cannot parse. If the frame carries
// an envelope_id, its ack is matched and timed like any other. It returns that
// envelope_id ("" if none).
func (s *Server) SendRaw(frame []byte) string {
	var head struct {
		EnvelopeID string `json:"envelope_id"`
		Type       string `json:"type"`
	}
	_ = json.Unmarshal(frame, &head)
	s.mu.Lock()
	f := s.addEnvelopeLocked(Envelope{ID: head.EnvelopeID, Type: head.Type, Frame: append(json.RawMessage(nil), frame...)})
	s.mu.Unlock()
	s.deliver(f)
	return head.EnvelopeID
}

// Redeliver sends the envelope envelopeID again under a new envelope ID with
// retry_attempt one higher and the given retry_reason ("timeout" is what Slack sends
// when an ack was late), as Slack does for unacknowledged events. The event_id stays
// the same, which is what the bot must dedupe on.
func (s *Server) Redeliver(envelopeID, reason string) (string, error) {
	f, id, err := s.redelivery(envelopeID, reason)
	if err != nil {
		return "", err
	}
	s.deliver(f)
	return id, nil
}

// RedeliverTo is Redeliver on connection conn only: Slack may send the
// retry to another of the app's connections than the first delivery.
func (s *Server) RedeliverTo(conn int, envelopeID, reason string) (string, error) {
	f, id, err := s.redelivery(envelopeID, reason)
	if err != nil {
		return "", err
	}
	return id, s.sendTo(conn, f)
}

func (s *Server) redelivery(envelopeID, reason string) (*outFrame, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var orig *Envelope
	for i := range s.st.Envelopes {
		if s.st.Envelopes[i].ID == envelopeID {
			orig = &s.st.Envelopes[i]
			break
		}
	}
	if orig == nil {
		return nil, "", fmt.Errorf("redeliver: no envelope %q was sent; use an ID returned by SendEvent or SendInteraction", envelopeID)
	}
	var frame map[string]json.RawMessage
	if err := json.Unmarshal(orig.Frame, &frame); err != nil {
		return nil, "", fmt.Errorf("redeliver %s: frame is not a JSON object: %w", envelopeID, err)
	}
	e := Envelope{
		ID:           s.newEnvelopeIDLocked(),
		Type:         orig.Type,
		EventID:      orig.EventID,
		RetryAttempt: orig.RetryAttempt + 1,
	}
	frame["envelope_id"], _ = json.Marshal(e.ID)
	frame["retry_attempt"], _ = json.Marshal(e.RetryAttempt)
	frame["retry_reason"], _ = json.Marshal(reason)
	e.Frame, _ = json.Marshal(frame)
	return s.addEnvelopeLocked(e), e.ID, nil
}

// Disconnect sends {"type":"disconnect","reason":reason} on every live connection and
// stops routing envelopes to them; slack-go then closes the socket and reconnects with
// a new ticket. It returns how many connections were told.
func (s *Server) Disconnect(reason string) int {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	var targets []*wsConn
	for id, c := range s.conns {
		if cn := s.connLocked(id); cn != nil && !cn.Draining && !c.isDone() {
			cn.Draining = true
			targets = append(targets, c)
		}
	}
	s.notifyLocked()
	s.mu.Unlock()
	n := 0
	for _, c := range targets {
		frame, _ := json.Marshal(map[string]any{
			"type":       "disconnect",
			"reason":     reason,
			"debug_info": map[string]any{"host": "applink-fake-" + strconv.Itoa(c.id)},
		})
		if c.write(frame) == nil {
			n++
		}
	}
	return n
}

// DropConnections closes every socket without a close frame, like a network failure,
// and returns how many it closed. The client notices through its read error or its
// ping watchdog.
func (s *Server) DropConnections() int {
	s.mu.Lock()
	var targets []*wsConn
	for _, c := range s.conns {
		targets = append(targets, c)
	}
	s.mu.Unlock()
	for _, c := range targets {
		c.close()
	}
	return len(targets)
}
