package session

import (
	"context"
	"fmt"
	"time"
)

// UserTurns lists the turns user asked in team that started at since or
// later, newest first, at most limit of them (all for limit <= 0): a
// person's recent threads and usage, for the Home tab.
func (s *Postgres) UserTurns(ctx context.Context, team, user string, since time.Time, limit int) ([]Turn, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = limit
	}
	out, err := pgQueryAll(ctx, s.pool, scanTurn, `SELECT `+turnColumns+`
		WHERE s.team = $1 AND t.user_id = $2 AND t.started >= $3 ORDER BY t.started DESC, t.id DESC LIMIT $4`,
		team, user, nanos(since), lim)
	if err != nil {
		return nil, fmt.Errorf("list the turns of %s: %w", user, err)
	}
	return out, nil
}
