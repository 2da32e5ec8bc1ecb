package session

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// inboxEvent is one event of Memory's Inbox.
type inboxEvent struct {
	data     []byte
	owner    string
	held     time.Time // until when owner holds it
	received time.Time
	expires  time.Time
	handled  bool
}

// clone copies t so that the caller shares no slice with the store.
func (t *Turn) clone() Turn {
	c := *t
	c.Parts = slices.Clone(t.Parts)
	return c
}

func (m *Memory) AddPart(ctx context.Context, turnID string, n int, ts string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t, err := m.liveTurn(turnID)
	if err != nil {
		return fmt.Errorf("record part %d of turn %s: %w", n, turnID, err)
	}
	parts, err := addPart(t.Parts, n, ts)
	if err != nil {
		return fmt.Errorf("record part %d of turn %s: %w", n, turnID, err)
	}
	t.Parts = parts
	if s, ok := m.sessions[t.Key]; ok {
		s.Updated = m.clock()
	}
	return nil
}

// addPart is AddPart's rule, shared by the stores: the next part is
// appended, a repeat of a recorded one changes nothing, anything else is
// refused.
func addPart(parts []string, n int, ts string) ([]string, error) {
	switch {
	case ts == "":
		return nil, fmt.Errorf("empty ts")
	case n == len(parts):
		return append(parts, ts), nil
	case n >= 0 && n < len(parts) && parts[n] == ts:
		return parts, nil
	case n >= 0 && n < len(parts):
		return nil, fmt.Errorf("part %d is recorded as %s, not %s", n, parts[n], ts)
	}
	return nil, fmt.Errorf("%d parts are recorded, so part %d cannot be next", len(parts), n)
}

func (m *Memory) Receive(ctx context.Context, key string, data []byte, owner string, hold, ttl time.Duration) (bool, error) {
	if err := checkReceive(key); err != nil {
		return false, err
	}
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	now := m.clock()
	if e, ok := m.inbox[key]; ok && now.Before(e.expires) {
		return false, nil
	}
	if m.inbox == nil {
		m.inbox = make(map[string]*inboxEvent)
	}
	m.inbox[key] = &inboxEvent{data: slices.Clone(data), owner: owner, held: now.Add(hold), received: now, expires: now.Add(ttl)}
	return true, nil
}

func (m *Memory) Handled(ctx context.Context, key string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if e, ok := m.inbox[key]; ok {
		e.handled = true
	}
	return nil
}

func (m *Memory) ClaimReceived(ctx context.Context, owner string, hold time.Duration) ([]Received, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	now := m.clock()
	var out []Received
	for k, e := range m.inbox {
		if e.handled || now.Before(e.held) || !now.Before(e.expires) {
			continue
		}
		e.owner, e.held = owner, now.Add(hold)
		out = append(out, Received{Key: k, Data: slices.Clone(e.data), Received: e.received})
	}
	slices.SortFunc(out, byReceived)
	return out, nil
}

func byReceived(a, b Received) int {
	return cmp.Or(a.Received.Compare(b.Received), cmp.Compare(a.Key, b.Key))
}
