package session

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

func (s *SQLite) AddPart(ctx context.Context, turnID string, n int, ts string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		sid, err := liveTurn(ctx, tx, turnID)
		if err != nil {
			return err
		}
		var recorded string
		if err := tx.QueryRowContext(ctx, `SELECT parts FROM turns WHERE id = ?`, turnID).Scan(&recorded); err != nil {
			return err
		}
		parts, err := addPart(strings.Fields(recorded), n, ts)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET parts = ? WHERE id = ?`, strings.Join(parts, " "), turnID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET updated = ? WHERE id = ?`, s.now().UnixNano(), sid)
		return err
	})
	if err != nil {
		return fmt.Errorf("record part %d of turn %s: %w", n, turnID, err)
	}
	return nil
}

// Receive is one statement, as FirstSeen: the insert wins, or the update
// of an expired key wins, or nothing changes.
func (s *SQLite) Receive(ctx context.Context, key string, data []byte, owner string, hold, ttl time.Duration) (bool, error) {
	if err := checkReceive(key); err != nil {
		return false, err
	}
	now := s.now()
	res, err := s.w.ExecContext(ctx, `INSERT INTO inbox (key, data, owner, held, received, expires) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET data = excluded.data, owner = excluded.owner, held = excluded.held,
			received = excluded.received, expires = excluded.expires, handled = 0
		WHERE inbox.expires <= ?`,
		key, data, owner, now.Add(hold).UnixNano(), now.UnixNano(), now.Add(ttl).UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("record event %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("record event %s: %w", key, err)
	}
	return n == 1, nil
}

func (s *SQLite) Handled(ctx context.Context, key string) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE inbox SET handled = 1 WHERE key = ?`, key); err != nil {
		return fmt.Errorf("mark event %s handled: %w", key, err)
	}
	return nil
}

// ClaimReceived is one statement on the one writer connection, so two
// claims cannot take the same event.
func (s *SQLite) ClaimReceived(ctx context.Context, owner string, hold time.Duration) ([]Received, error) {
	now := s.now()
	out, err := queryAll(ctx, s.w, scanReceived, `UPDATE inbox SET owner = ?, held = ?
		WHERE handled = 0 AND held <= ? AND expires > ?
		RETURNING key, data, received`, owner, now.Add(hold).UnixNano(), now.UnixNano(), now.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("claim received events: %w", err)
	}
	slices.SortFunc(out, byReceived)
	return out, nil
}
