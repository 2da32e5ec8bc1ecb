package session

import (
	"context"
	"fmt"
	"time"
)

// Rate is one statement: the row is made from the turn's own (so an
// unknown turn inserts nothing) and replaces the user's earlier one.
func (s *SQLite) Rate(ctx context.Context, f Feedback) error {
	if err := checkFeedback(f); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO feedback (turn_id, user_id, rating, reason, comment, repo, commit_sha, at)
		SELECT t.id, ?, ?, ?, ?, s.repo, s.commit_sha, ? FROM turns t JOIN sessions s ON s.id = t.session_id WHERE t.id = ?
		ON CONFLICT (turn_id, user_id) DO UPDATE SET rating = excluded.rating, reason = excluded.reason,
			comment = excluded.comment, repo = excluded.repo, commit_sha = excluded.commit_sha, at = excluded.at`,
		f.User, f.Rating, f.Reason, f.Comment, s.now().UnixNano(), f.TurnID)
	if err != nil {
		return fmt.Errorf("rate turn %s: %w", f.TurnID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("rate turn %s: %w", f.TurnID, err)
	} else if n == 0 {
		return fmt.Errorf("rate turn %s: %w", f.TurnID, ErrNotFound)
	}
	return nil
}

func (s *SQLite) FeedbackSince(ctx context.Context, since time.Time, limit int) ([]Rated, error) {
	if limit <= 0 {
		limit = -1 // SQLite's "no limit"
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+ratedColumns+` WHERE f.at >= ?
		ORDER BY f.at DESC, f.turn_id, f.user_id LIMIT ?`, nanos(since), limit)
	if err != nil {
		return nil, fmt.Errorf("list feedback since %s: %w", since.Format(time.RFC3339), err)
	}
	defer rows.Close()
	out, err := collectRows(rows, scanRated)
	if err != nil {
		return nil, fmt.Errorf("list feedback since %s: %w", since.Format(time.RFC3339), err)
	}
	return out, nil
}
