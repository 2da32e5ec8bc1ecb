package session

import (
	"context"
	"fmt"
	"time"
)

// Rate is one statement, as SQLite's: ON CONFLICT locks the user's
// earlier row, so of two clicks racing on two replicas the later write
// stays whole.
func (s *Postgres) Rate(ctx context.Context, f Feedback) error {
	if err := checkFeedback(f); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO feedback (turn_id, user_id, rating, reason, comment, repo, commit_sha, at)
		SELECT t.id, $1, $2, $3, $4, s.repo, s.commit_sha, $5 FROM turns t JOIN sessions s ON s.id = t.session_id WHERE t.id = $6
		ON CONFLICT (turn_id, user_id) DO UPDATE SET rating = excluded.rating, reason = excluded.reason,
			comment = excluded.comment, repo = excluded.repo, commit_sha = excluded.commit_sha, at = excluded.at`,
		pgText(f.User), f.Rating, pgText(f.Reason), pgText(f.Comment), s.now().UnixNano(), pgText(f.TurnID))
	if err != nil {
		return fmt.Errorf("rate turn %s: %w", f.TurnID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("rate turn %s: %w", f.TurnID, ErrNotFound)
	}
	return nil
}

func (s *Postgres) FeedbackSince(ctx context.Context, since time.Time, limit int) ([]Rated, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	out, err := pgQueryAll(ctx, s.pool, scanRated, `SELECT `+ratedColumns+` WHERE f.at >= $1
		ORDER BY f.at DESC, f.turn_id, f.user_id LIMIT $2`, nanos(since), lim)
	if err != nil {
		return nil, fmt.Errorf("list feedback since %s: %w", since.Format(time.RFC3339), err)
	}
	return out, nil
}
