package slacktest

import (
	"fmt"
	"sort"
)

// Slack delivers each payload to one of an app's connections, any of them
// ("each payload may be sent to any of the connections"), and a retry of an
// unacked event may go to another. SendEvent spreads envelopes round-robin;
// the functions here pick the connection, so a test of several processes
// sharing one app can put an event, or the same event twice, exactly where
// it wants.

// LiveConns returns the IDs of the connections that take envelopes now
// (open, not told to disconnect), in the order they connected.
func (s *Server) LiveConns() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int
	for id, c := range s.conns {
		if cn := s.connLocked(id); cn != nil && !cn.Draining && !c.isDone() {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

// SendEventTo sends ev, framed as SendEvent frames it, on connection conn
// (an ID from LiveConns or State.Conns) and returns the envelope ID. It
// fails if that connection is not live: the envelope is then recorded but
// not sent, as a test that names a connection wants no other.
func (s *Server) SendEventTo(conn int, ev Event) (string, error) {
	f, id := s.eventFrame(ev)
	return id, s.sendTo(conn, f)
}

// sendTo writes f on connection conn only.
func (s *Server) sendTo(conn int, f *outFrame) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	c := s.conns[conn]
	cn := s.connLocked(conn)
	s.mu.Unlock()
	if c == nil || cn == nil || cn.Draining || c.isDone() {
		return fmt.Errorf("send to connection %d: it is not live (live: %v)", conn, s.LiveConns())
	}
	if !s.writeFrame(c, f) {
		return fmt.Errorf("send to connection %d: the write failed and the connection was closed", conn)
	}
	return nil
}

// SendEventEach sends ev once on every live connection, each copy in its
// own envelope but with one event_id: the same event delivered to every
// process of the app at once, the worst case of a retry landing elsewhere
// while the first delivery is still being handled. It returns the envelope
// IDs, one per connection, in connection order.
func (s *Server) SendEventEach(ev Event) []string {
	if ev.EventID == "" {
		s.mu.Lock()
		s.eventSeq++
		ev.EventID = fmt.Sprintf("Ev%010d", s.eventSeq)
		s.mu.Unlock()
	}
	var ids []string
	for _, conn := range s.LiveConns() {
		if id, err := s.SendEventTo(conn, ev); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
