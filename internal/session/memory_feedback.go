package session

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// feedbackKey is one user's rating of one turn: a second rating replaces
// the first.
type feedbackKey struct{ turn, user string }

func (m *Memory) Rate(ctx context.Context, f Feedback) error {
	if err := checkFeedback(f); err != nil {
		return err
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t, ok := m.turns[f.TurnID]
	if !ok {
		return fmt.Errorf("rate turn %s: %w", f.TurnID, ErrNotFound)
	}
	r := Rated{Feedback: f}
	r.Time = m.clock()
	if s := m.sessions[t.Key]; s != nil {
		r.Repo, r.Commit = s.Repo, s.Commit
	}
	if m.feedback == nil {
		m.feedback = make(map[feedbackKey]Rated)
	}
	m.feedback[feedbackKey{f.TurnID, f.User}] = r
	return nil
}

func (m *Memory) FeedbackSince(ctx context.Context, since time.Time, limit int) ([]Rated, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []Rated
	for k, r := range m.feedback {
		t, ok := m.turns[k.turn]
		if !ok {
			delete(m.feedback, k) // its turn was purged: it goes too
			continue
		}
		if r.Time.Before(since) {
			continue
		}
		r.Turn = t.clone()
		r.Later = m.questionsAfter(t)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Rated) int {
		return cmp.Or(b.Time.Compare(a.Time), cmp.Compare(a.TurnID, b.TurnID), cmp.Compare(a.User, b.User))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// questionsAfter counts the turns of t's thread that started after t and
// asked a question of their own (a continued turn's question is the one
// its successor answers).
func (m *Memory) questionsAfter(t *Turn) int {
	n := 0
	for _, o := range m.turns {
		if o.Key == t.Key && o.State != TurnContinued && o.Started.After(t.Started) {
			n++
		}
	}
	return n
}
