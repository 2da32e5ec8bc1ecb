package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

func (s *Postgres) AddPart(ctx context.Context, turnID string, n int, ts string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		sid, err := s.liveTurn(ctx, tx, turnID) // locks the turn's row
		if err != nil {
			return err
		}
		var recorded string
		if err := tx.QueryRow(ctx, `SELECT parts FROM turns WHERE id = $1`, turnID).Scan(&recorded); err != nil {
			return err
		}
		parts, err := addPart(strings.Fields(recorded), n, ts)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE turns SET parts = $1 WHERE id = $2`, pgText(strings.Join(parts, " ")), turnID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET updated = $1 WHERE id = $2`, s.now().UnixNano(), sid)
		return err
	})
	if err != nil {
		return fmt.Errorf("record part %d of turn %s: %w", n, turnID, err)
	}
	return nil
}

// Receive is one statement, as FirstSeen: the insert wins, or the update
// of an expired key wins, or nothing changes.
func (s *Postgres) Receive(ctx context.Context, key string, data []byte, owner string, hold, ttl time.Duration) (bool, error) {
	if err := checkReceive(key); err != nil {
		return false, err
	}
	now := s.now()
	tag, err := s.pool.Exec(ctx, `INSERT INTO inbox (key, data, owner, held, received, expires) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (key) DO UPDATE SET data = excluded.data, owner = excluded.owner, held = excluded.held,
			received = excluded.received, expires = excluded.expires, handled = false
		WHERE inbox.expires <= $7`,
		pgText(key), data, pgText(owner), now.Add(hold).UnixNano(), now.UnixNano(), now.Add(ttl).UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("record event %s: %w", key, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Postgres) Handled(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE inbox SET handled = true WHERE key = $1`, pgText(key)); err != nil {
		return fmt.Errorf("mark event %s handled: %w", key, err)
	}
	return nil
}

// ClaimReceived is one UPDATE: under READ COMMITTED a claimer that waited
// for another's row lock re-checks the hold on the row as the other left
// it, and skips it, so each event goes to one claimer.
func (s *Postgres) ClaimReceived(ctx context.Context, owner string, hold time.Duration) ([]Received, error) {
	now := s.now()
	out, err := pgQueryAll(ctx, s.pool, scanReceived, `UPDATE inbox SET owner = $1, held = $2
		WHERE NOT handled AND held <= $3 AND expires > $3
		RETURNING key, data, received`, pgText(owner), now.Add(hold).UnixNano(), now.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("claim received events: %w", err)
	}
	slices.SortFunc(out, byReceived)
	return out, nil
}
