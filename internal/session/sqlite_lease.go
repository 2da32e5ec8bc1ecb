package session

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The SQLite store's leases matter when several processes share one file
// (two bots started by mistake, a second one during a rolling restart):
// its writes are serialized by the file's write lock, so each method is a
// plain read-then-write inside one write transaction.

// takeLease gives key's lease to owner if it is free, expired or owner's.
func (s *SQLite) takeLease(ctx context.Context, tx *sql.Tx, key Key, owner string, ttl time.Duration) (bool, error) {
	now := s.now()
	res, err := tx.ExecContext(ctx, `INSERT INTO leases (team, channel, thread, owner, expires) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (team, channel, thread) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
		WHERE leases.owner = excluded.owner OR leases.expires <= ?`,
		key.Team, key.Channel, key.Thread, owner, now.Add(ttl).UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("take lease: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *SQLite) AcquireThread(ctx context.Context, key Key, owner string, ttl time.Duration) (bool, error) {
	var ok bool
	err := s.write(ctx, func(tx *sql.Tx) (err error) {
		ok, err = s.takeLease(ctx, tx, key, owner, ttl)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("acquire thread %s: %w", key, err)
	}
	return ok, nil
}

func (s *SQLite) RenewThread(ctx context.Context, key Key, owner string, ttl time.Duration) (bool, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE leases SET expires = ? WHERE team = ? AND channel = ? AND thread = ? AND owner = ?`,
		s.now().Add(ttl).UnixNano(), key.Team, key.Channel, key.Thread, owner)
	if err != nil {
		return false, fmt.Errorf("renew thread %s: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("renew thread %s: %w", key, err)
	}
	return n == 1, nil
}

func (s *SQLite) ReleaseThread(ctx context.Context, key Key, owner string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM leases WHERE team = ? AND channel = ? AND thread = ? AND owner = ?`,
		key.Team, key.Channel, key.Thread, owner); err != nil {
		return fmt.Errorf("release thread %s: %w", key, err)
	}
	return nil
}

func (s *SQLite) ClaimUnfinished(ctx context.Context, owner string, ttl time.Duration) ([]Claim, error) {
	var out []Claim
	err := s.write(ctx, func(tx *sql.Tx) error {
		out = nil
		now := s.now()
		rows, err := tx.QueryContext(ctx, `SELECT `+turnColumns+`
			LEFT JOIN leases l ON l.team = s.team AND l.channel = s.channel AND l.thread = s.thread
			WHERE t.state IN (?, ?) AND (l.owner IS NULL OR l.expires <= ?)
			ORDER BY t.started, t.id`, string(TurnRunning), string(TurnInterrupted), now.UnixNano())
		if err != nil {
			return err
		}
		byKey := map[Key]int{}
		for rows.Next() {
			t, err := scanTurn(rows)
			if err != nil {
				rows.Close()
				return err
			}
			i, ok := byKey[t.Key]
			if !ok {
				i = len(out)
				byKey[t.Key] = i
				out = append(out, Claim{Key: t.Key})
			}
			out[i].Turns = append(out[i].Turns, t)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT DISTINCT p.team, p.channel, p.thread FROM pending p
			LEFT JOIN leases l ON l.team = p.team AND l.channel = p.channel AND l.thread = p.thread
			WHERE l.owner IS NULL OR l.expires <= ?`, now.UnixNano())
		if err != nil {
			return err
		}
		keys, err := collectRows(rows, scanKey)
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		var queued []Claim
		for _, k := range keys {
			if _, ok := byKey[k]; !ok {
				queued = append(queued, Claim{Key: k})
			}
		}
		slices.SortFunc(queued, byOldestTurn)
		out = append(out, queued...)
		for _, c := range out {
			if _, err := s.takeLease(ctx, tx, c.Key, owner, ttl); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim unfinished threads: %w", err)
	}
	return out, nil
}

func (s *SQLite) Enqueue(ctx context.Context, key Key, id string, data []byte, owner string, ttl time.Duration) (bool, error) {
	if err := checkEnqueue(key, id); err != nil {
		return false, err
	}
	if data == nil {
		data = []byte{}
	}
	var ok bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO pending (team, channel, thread, id, data, enqueued) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (team, channel, thread, id) DO NOTHING`,
			key.Team, key.Channel, key.Thread, id, data, s.now().UnixNano()); err != nil {
			return fmt.Errorf("insert message: %w", err)
		}
		var err error
		ok, err = s.takeLease(ctx, tx, key, owner, ttl)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("enqueue %s on %s: %w", id, key, err)
	}
	return ok, nil
}

func (s *SQLite) NextPending(ctx context.Context, key Key, owner string, done int64) (Pending, bool, error) {
	var p Pending
	var ok bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var holder string
		err := tx.QueryRowContext(ctx, `SELECT owner FROM leases WHERE team = ? AND channel = ? AND thread = ?`,
			key.Team, key.Channel, key.Thread).Scan(&holder)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && holder != owner) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM pending WHERE team = ? AND channel = ? AND thread = ? AND seq <= ?`,
			key.Team, key.Channel, key.Thread, done); err != nil {
			return fmt.Errorf("drop handled messages: %w", err)
		}
		var enqueued int64
		err = tx.QueryRowContext(ctx, `SELECT seq, id, data, enqueued FROM pending
			WHERE team = ? AND channel = ? AND thread = ? ORDER BY seq LIMIT 1`,
			key.Team, key.Channel, key.Thread).Scan(&p.Seq, &p.ID, &p.Data, &enqueued)
		if errors.Is(err, sql.ErrNoRows) {
			_, err = tx.ExecContext(ctx, `DELETE FROM leases WHERE team = ? AND channel = ? AND thread = ?`, key.Team, key.Channel, key.Thread)
			return err
		}
		if err != nil {
			return err
		}
		p.Key, p.Enqueued, ok = key, fromNanos(enqueued), true
		return nil
	})
	if err != nil {
		return Pending{}, false, fmt.Errorf("next message of %s for %s: %w", key, owner, err)
	}
	return p, ok, nil
}

func (s *SQLite) RequestStop(ctx context.Context, turnID, user string) (bool, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE turns SET stop_by = CASE WHEN stop_by = '' THEN ? ELSE stop_by END WHERE id = ? AND state = ?`,
		user, turnID, string(TurnRunning))
	if err != nil {
		return false, fmt.Errorf("request a stop of turn %s: %w", turnID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("request a stop of turn %s: %w", turnID, err)
	}
	return n == 1, nil
}

func (s *SQLite) StopRequested(ctx context.Context, turnID string) (string, error) {
	var user string
	err := s.r.QueryRowContext(ctx, `SELECT stop_by FROM turns WHERE id = ?`, turnID).Scan(&user)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("look for a stop request on turn %s: %w", turnID, err)
	}
	return user, nil
}

func (s *SQLite) ThreadBusy(ctx context.Context, key Key) (bool, error) {
	var busy bool
	err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pending WHERE team = ? AND channel = ? AND thread = ?)
		OR EXISTS (SELECT 1 FROM leases WHERE team = ? AND channel = ? AND thread = ? AND expires > ?)`,
		key.Team, key.Channel, key.Thread, key.Team, key.Channel, key.Thread, s.now().UnixNano()).Scan(&busy)
	if err != nil {
		return false, fmt.Errorf("look for work on thread %s: %w", key, err)
	}
	return busy, nil
}
