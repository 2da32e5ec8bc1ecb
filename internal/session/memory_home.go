package session

import (
	"context"
	"slices"
	"strings"
	"time"
)

// UserTurns lists the turns user asked in team that started at since or
// later, newest first, at most limit of them (all for limit <= 0): a
// person's recent threads and usage, for the Home tab.
func (m *Memory) UserTurns(ctx context.Context, team, user string, since time.Time, limit int) ([]Turn, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []Turn
	for _, t := range m.turns {
		if t.Key.Team == team && t.User == user && !t.Started.Before(since) {
			out = append(out, t.clone())
		}
	}
	slices.SortFunc(out, newestFirst)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func newestFirst(a, b Turn) int {
	if c := b.Started.Compare(a.Started); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}
