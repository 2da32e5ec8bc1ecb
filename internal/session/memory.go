package session

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// MemoryOptions configures a Memory store.
type MemoryOptions struct {
	// Now is the store's clock; nil means time.Now. Tests inject a fake one
	// to expire dedupe keys and age sessions without sleeping.
	Now func() time.Time
	// Limits bounds the stored history, as in the durable stores.
	Limits Limits
}

// Memory is a Store that keeps everything in process memory: for tests, the
// demo, and a single replica that can afford to forget threads on restart.
// It is safe for concurrent use; values are copied in and out, so callers
// never share slices with it.
type Memory struct {
	now    func() time.Time
	limits Limits

	mu       sync.Mutex
	closed   bool
	sessions map[Key]*Session
	turns    map[string]*Turn
	dedupe   map[string]time.Time // key → expiry
	leases   map[Key]lease        // made on first use; see memory_lease.go
	queues   map[Key][]Pending
	seq      int64                  // last Pending.Seq handed out
	stops    map[string]string      // turn ID → who asked to stop it; made on first use
	inbox    map[string]*inboxEvent // made on first use; see memory_inbox.go
	feedback map[feedbackKey]Rated  // made on first use; see memory_feedback.go
}

var _ Backend = (*Memory)(nil)

// NewMemory returns an empty in-memory store on the real clock.
func NewMemory() *Memory { return NewMemoryWith(MemoryOptions{}) }

// NewMemoryWith returns an empty in-memory store with options.
func NewMemoryWith(opts MemoryOptions) *Memory {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Memory{
		now:      now,
		limits:   opts.Limits,
		sessions: make(map[Key]*Session),
		turns:    make(map[string]*Turn),
		dedupe:   make(map[string]time.Time),
	}
}

// errClosed is returned by every method after Close.
var errClosed = fmt.Errorf("session store is closed")

// clock returns the store's now without monotonic reading, so stored times
// compare the same way after a round trip through any backend.
func (m *Memory) clock() time.Time { return m.now().Round(0) }

func (m *Memory) lock() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errClosed
	}
	return nil
}

func (m *Memory) Session(ctx context.Context, key Key) (Session, bool, error) {
	return m.session(key, true)
}

func (m *Memory) SessionInfo(ctx context.Context, key Key) (Session, bool, error) {
	return m.session(key, false)
}

// session is a copy of key's session, with a copy of its history or none.
func (m *Memory) session(key Key, history bool) (Session, bool, error) {
	if err := m.lock(); err != nil {
		return Session{}, false, err
	}
	defer m.mu.Unlock()
	s, ok := m.sessions[key]
	if !ok {
		return Session{}, false, nil
	}
	out := *s
	out.History = nil
	if history {
		out.History = cloneMessages(s.History)
	}
	return out, true, nil
}

func (m *Memory) StartTurn(ctx context.Context, t Turn, repo string, userMsg llm.Message) error {
	if err := checkStartTurn(t); err != nil {
		return err
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, dup := m.turns[t.ID]; dup {
		return fmt.Errorf("start turn %s: %w", t.ID, ErrTurnExists)
	}
	now := m.clock()
	s, ok := m.sessions[t.Key]
	if !ok {
		s = &Session{Key: t.Key, Repo: repo, Created: now}
	}
	hist, err := m.appendLimited(s.History, []llm.Message{userMsg})
	if err != nil {
		return fmt.Errorf("start turn %s: %w", t.ID, err)
	}
	s.History = hist
	s.Updated = now
	m.sessions[t.Key] = s

	t.State = TurnRunning
	t.Repo = repo
	if t.Started.IsZero() {
		t.Started = now
	}
	t.Ended = time.Time{}
	t.Parts = nil
	m.turns[t.ID] = &t
	return nil
}

// appendLimited returns hist + msgs (copied and clipped) within the limits.
// hist is the store's own slice (Session hands out copies), so appending to
// it in place is safe.
func (m *Memory) appendLimited(hist, msgs []llm.Message) ([]llm.Message, error) {
	out := hist
	for _, msg := range msgs {
		out = append(out, m.limits.clip(cloneMessage(msg)))
	}
	drop, err := m.limits.trimTurns(len(out), func(i int) llm.Role { return out[i].Role })
	if err != nil {
		return nil, err
	}
	return out[drop:], nil
}

func (m *Memory) AppendStep(ctx context.Context, turnID string, msgs []llm.Message, usage llm.Usage) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t, err := m.liveTurn(turnID)
	if err != nil {
		return fmt.Errorf("append step to turn %s: %w", turnID, err)
	}
	s, ok := m.sessions[t.Key]
	if !ok {
		return fmt.Errorf("append step to turn %s: session %s: %w", turnID, t.Key, ErrNotFound)
	}
	hist, err := m.appendLimited(s.History, msgs)
	if err != nil {
		return fmt.Errorf("append step to turn %s: %w", turnID, err)
	}
	s.History = hist
	s.Usage = s.Usage.Add(usage)
	s.Updated = m.clock()
	t.Steps++
	t.Usage = t.Usage.Add(usage)
	return nil
}

// liveTurn returns a turn that may still be written to.
func (m *Memory) liveTurn(id string) (*Turn, error) {
	t, ok := m.turns[id]
	if !ok {
		return nil, ErrNotFound
	}
	if t.State.Ended() {
		return nil, fmt.Errorf("state %s: %w", t.State, ErrTurnEnded)
	}
	return t, nil
}

func (m *Memory) EndTurn(ctx context.Context, turnID string, state TurnState, errRef string) error {
	if err := checkEndTurn(turnID, state); err != nil {
		return err
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t, err := m.liveTurn(turnID)
	if err != nil {
		return fmt.Errorf("end turn %s: %w", turnID, err)
	}
	now := m.clock()
	t.State = state
	t.ErrRef = errRef
	t.Ended = now
	if s, ok := m.sessions[t.Key]; ok {
		if state == TurnDone {
			s.Turns++
		}
		s.Updated = now
	}
	return nil
}

func (m *Memory) SetTurnState(ctx context.Context, turnID string, state TurnState) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t, err := m.liveTurn(turnID)
	if err != nil {
		return fmt.Errorf("set state of turn %s: %w", turnID, err)
	}
	t.State = state
	if s, ok := m.sessions[t.Key]; ok {
		s.Updated = m.clock()
	}
	return nil
}

func (m *Memory) ContinueTurn(ctx context.Context, oldID string, next Turn) error {
	if err := checkContinueTurn(oldID, next); err != nil {
		return err
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	old, err := m.liveTurn(oldID)
	if err != nil {
		return fmt.Errorf("continue turn %s: %w", oldID, err)
	}
	if _, dup := m.turns[next.ID]; dup {
		return fmt.Errorf("continue turn %s as %s: %w", oldID, next.ID, ErrTurnExists)
	}
	now := m.clock()
	old.State = TurnContinued
	old.Ended = now
	t := *old
	t.Parts = slices.Clone(old.Parts)
	t.ID = next.ID
	t.State = TurnRunning
	t.Started = next.Started
	if t.Started.IsZero() {
		t.Started = now
	}
	t.Ended = time.Time{}
	t.ErrRef = ""
	m.turns[t.ID] = &t
	if s, ok := m.sessions[t.Key]; ok {
		s.Updated = now
	}
	return nil
}

func (m *Memory) ReplaceHistory(ctx context.Context, key Key, history []llm.Message) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	s, ok := m.sessions[key]
	if !ok {
		return fmt.Errorf("replace history of %s: %w", key, ErrNotFound)
	}
	hist, err := m.appendLimited(nil, history)
	if err != nil {
		return fmt.Errorf("replace history of %s: %w", key, err)
	}
	s.History = hist
	s.Updated = m.clock()
	return nil
}

func (m *Memory) SetCommit(ctx context.Context, key Key, commit string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	s, ok := m.sessions[key]
	if !ok {
		return fmt.Errorf("set commit of %s: %w", key, ErrNotFound)
	}
	s.Commit = commit
	s.Updated = m.clock()
	return nil
}

func (m *Memory) Unfinished(ctx context.Context) ([]Turn, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []Turn
	for _, t := range m.turns {
		if t.State == TurnRunning || t.State == TurnInterrupted {
			out = append(out, t.clone())
		}
	}
	slices.SortFunc(out, func(a, b Turn) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (m *Memory) Turn(ctx context.Context, turnID string) (Turn, error) {
	if err := m.lock(); err != nil {
		return Turn{}, err
	}
	defer m.mu.Unlock()
	t, ok := m.turns[turnID]
	if !ok {
		return Turn{}, fmt.Errorf("turn %s: %w", turnID, ErrNotFound)
	}
	return t.clone(), nil
}

func (m *Memory) FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	now := m.clock()
	if exp, ok := m.dedupe[key]; ok && now.Before(exp) {
		return false, nil
	}
	m.dedupe[key] = now.Add(ttl)
	return true, nil
}

func (m *Memory) Sessions(ctx context.Context, limit int) ([]Session, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		c := *s
		c.History = nil
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Session) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.Key.String(), b.Key.String()))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *Memory) Purge(ctx context.Context, before time.Time) (int, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := 0
	for k, s := range m.sessions {
		if s.Updated.Before(before) {
			delete(m.sessions, k)
			n++
		}
	}
	for id, t := range m.turns {
		if _, ok := m.sessions[t.Key]; !ok {
			delete(m.turns, id)
			delete(m.stops, id)
		}
	}
	now := m.clock()
	for k, exp := range m.dedupe {
		if !now.Before(exp) {
			delete(m.dedupe, k)
		}
	}
	for k, e := range m.inbox {
		if !now.Before(e.expires) {
			delete(m.inbox, k)
		}
	}
	return n, nil
}

func (m *Memory) Ping(ctx context.Context) error {
	if err := m.lock(); err != nil {
		return err
	}
	m.mu.Unlock()
	return nil
}

// Close makes every later call fail; the data is dropped.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.sessions, m.turns, m.dedupe = nil, nil, nil
	return nil
}

func cloneMessages(ms []llm.Message) []llm.Message {
	if ms == nil {
		return nil
	}
	out := make([]llm.Message, len(ms))
	for i, m := range ms {
		out[i] = cloneMessage(m)
	}
	return out
}

func cloneMessage(m llm.Message) llm.Message {
	m.ToolCalls = slices.Clone(m.ToolCalls)
	return m
}
