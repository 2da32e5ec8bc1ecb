package session

import (
	"context"
	"fmt"
	"time"
)

// UserTurns lists the turns user asked in team that started at since or
// later, newest first, at most limit of them (all for limit <= 0): a
// person's recent threads and usage, for the Home tab.
func (s *SQLite) UserTurns(ctx context.Context, team, user string, since time.Time, limit int) ([]Turn, error) {
	if limit <= 0 {
		limit = -1 // SQLite's "no limit"
	}
	out, err := queryAll(ctx, s.r, scanTurn, `SELECT `+turnColumns+`
		WHERE s.team = ? AND t.user_id = ? AND t.started >= ? ORDER BY t.started DESC, t.id DESC LIMIT ?`,
		team, user, nanos(since), limit)
	if err != nil {
		return nil, fmt.Errorf("list the turns of %s: %w", user, err)
	}
	return out, nil
}
