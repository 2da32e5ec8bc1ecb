package session

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// lease is a thread's holder and when others may take the thread.
type lease struct {
	owner   string
	expires time.Time
}

// take gives key's lease to owner if it is free, expired or owner's; the
// caller holds m.mu.
func (m *Memory) take(key Key, owner string, ttl time.Duration) bool {
	now := m.clock()
	if l, ok := m.leases[key]; ok && l.owner != owner && now.Before(l.expires) {
		return false
	}
	if m.leases == nil {
		m.leases = make(map[Key]lease)
	}
	m.leases[key] = lease{owner: owner, expires: now.Add(ttl)}
	return true
}

func (m *Memory) AcquireThread(ctx context.Context, key Key, owner string, ttl time.Duration) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	return m.take(key, owner, ttl), nil
}

func (m *Memory) RenewThread(ctx context.Context, key Key, owner string, ttl time.Duration) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	if l, ok := m.leases[key]; !ok || l.owner != owner {
		return false, nil
	}
	m.leases[key] = lease{owner: owner, expires: m.clock().Add(ttl)}
	return true, nil
}

func (m *Memory) ReleaseThread(ctx context.Context, key Key, owner string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if l, ok := m.leases[key]; ok && l.owner == owner {
		delete(m.leases, key)
	}
	return nil
}

func (m *Memory) ClaimUnfinished(ctx context.Context, owner string, ttl time.Duration) ([]Claim, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	now := m.clock()
	work := map[Key][]Turn{}
	for _, t := range m.turns {
		if t.State == TurnRunning || t.State == TurnInterrupted {
			work[t.Key] = append(work[t.Key], t.clone())
		}
	}
	for k, q := range m.queues {
		if _, ok := work[k]; !ok && len(q) > 0 {
			work[k] = nil
		}
	}
	var out []Claim
	for k, turns := range work {
		if l, ok := m.leases[k]; ok && now.Before(l.expires) {
			continue
		}
		m.take(k, owner, ttl)
		slices.SortFunc(turns, byStarted)
		out = append(out, Claim{Key: k, Turns: turns})
	}
	slices.SortFunc(out, byOldestTurn)
	return out, nil
}

func byStarted(a, b Turn) int { return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID)) }

// byOldestTurn orders claims by their oldest unfinished turn; threads with
// only queued messages come last, by key.
func byOldestTurn(a, b Claim) int {
	switch {
	case len(a.Turns) > 0 && len(b.Turns) > 0:
		if c := byStarted(a.Turns[0], b.Turns[0]); c != 0 {
			return c
		}
	case len(a.Turns) > 0:
		return -1
	case len(b.Turns) > 0:
		return 1
	}
	return cmp.Compare(a.Key.String(), b.Key.String())
}

func (m *Memory) Enqueue(ctx context.Context, key Key, id string, data []byte, owner string, ttl time.Duration) (bool, error) {
	if err := checkEnqueue(key, id); err != nil {
		return false, err
	}
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	q := m.queues[key]
	if !slices.ContainsFunc(q, func(p Pending) bool { return p.ID == id }) {
		m.seq++
		if m.queues == nil {
			m.queues = make(map[Key][]Pending)
		}
		m.queues[key] = append(q, Pending{Seq: m.seq, Key: key, ID: id, Data: slices.Clone(data), Enqueued: m.clock()})
	}
	return m.take(key, owner, ttl), nil
}

func (m *Memory) NextPending(ctx context.Context, key Key, owner string, done int64) (Pending, bool, error) {
	if err := m.lock(); err != nil {
		return Pending{}, false, err
	}
	defer m.mu.Unlock()
	if l, ok := m.leases[key]; !ok || l.owner != owner {
		return Pending{}, false, fmt.Errorf("next message of %s for %s: %w", key, owner, ErrLeaseLost)
	}
	q := slices.DeleteFunc(m.queues[key], func(p Pending) bool { return p.Seq <= done })
	if len(q) == 0 {
		delete(m.queues, key)
		delete(m.leases, key)
		return Pending{}, false, nil
	}
	m.queues[key] = q
	p := q[0]
	p.Data = slices.Clone(p.Data)
	return p, true, nil
}

func (m *Memory) RequestStop(ctx context.Context, turnID, user string) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	if t, ok := m.turns[turnID]; !ok || t.State != TurnRunning {
		return false, nil
	}
	if m.stops == nil {
		m.stops = make(map[string]string)
	}
	if m.stops[turnID] == "" {
		m.stops[turnID] = user
	}
	return true, nil
}

func (m *Memory) StopRequested(ctx context.Context, turnID string) (string, error) {
	if err := m.lock(); err != nil {
		return "", err
	}
	defer m.mu.Unlock()
	return m.stops[turnID], nil
}

func (m *Memory) ThreadBusy(ctx context.Context, key Key) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	if len(m.queues[key]) > 0 {
		return true, nil
	}
	l, ok := m.leases[key]
	return ok && m.clock().Before(l.expires), nil
}
