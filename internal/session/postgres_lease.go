package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Every race between replicas over a thread is decided on its row in
// leases: INSERT … ON CONFLICT DO UPDATE locks the existing row and checks
// its WHERE against the newest version, so of two replicas taking one
// expired lease exactly one sees a row come back. Enqueue and NextPending
// both lock that row before they touch the queue, which makes "enqueue,
// then try the lease" and "find the queue empty, then release" exclude
// each other.

// takeLeaseSQL takes a lease if it is free, expired or the taker's.
// $1-$3 key, $4 owner, $5 new expiry, $6 now.
const takeLeaseSQL = `INSERT INTO leases (team, channel, thread, owner, expires) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (team, channel, thread) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
	WHERE leases.owner = excluded.owner OR leases.expires <= $6`

func (s *Postgres) takeLease(ctx context.Context, tx pgx.Tx, key Key, owner string, ttl time.Duration) (bool, error) {
	now := s.now()
	tag, err := tx.Exec(ctx, takeLeaseSQL, key.Team, key.Channel, key.Thread, pgText(owner), now.Add(ttl).UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("take lease: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Postgres) AcquireThread(ctx context.Context, key Key, owner string, ttl time.Duration) (bool, error) {
	now := s.now()
	tag, err := s.pool.Exec(ctx, takeLeaseSQL, key.Team, key.Channel, key.Thread, pgText(owner), now.Add(ttl).UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("acquire thread %s: %w", key, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Postgres) RenewThread(ctx context.Context, key Key, owner string, ttl time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE leases SET expires = $1 WHERE team = $2 AND channel = $3 AND thread = $4 AND owner = $5`,
		s.now().Add(ttl).UnixNano(), key.Team, key.Channel, key.Thread, pgText(owner))
	if err != nil {
		return false, fmt.Errorf("renew thread %s: %w", key, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Postgres) ReleaseThread(ctx context.Context, key Key, owner string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM leases WHERE team = $1 AND channel = $2 AND thread = $3 AND owner = $4`,
		key.Team, key.Channel, key.Thread, pgText(owner)); err != nil {
		return fmt.Errorf("release thread %s: %w", key, err)
	}
	return nil
}

// ClaimUnfinished takes the leases in one statement over the threads with
// work, in key order so two claimers lock rows in the same order and do
// not deadlock; the RETURNING rows are the threads this call won.
func (s *Postgres) ClaimUnfinished(ctx context.Context, owner string, ttl time.Duration) ([]Claim, error) {
	var out []Claim
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out = nil
		now := s.now()
		rows, err := tx.Query(ctx, `WITH work AS (
				SELECT s.team, s.channel, s.thread FROM turns t JOIN sessions s ON s.id = t.session_id WHERE t.state IN ($1, $2)
				UNION
				SELECT team, channel, thread FROM pending
			)
			INSERT INTO leases (team, channel, thread, owner, expires)
			SELECT w.team, w.channel, w.thread, $3, $4 FROM work w
			LEFT JOIN leases l ON l.team = w.team AND l.channel = w.channel AND l.thread = w.thread
			WHERE l.owner IS NULL OR l.expires <= $5
			ORDER BY w.team, w.channel, w.thread
			ON CONFLICT (team, channel, thread) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
			WHERE leases.expires <= $5
			RETURNING team, channel, thread`,
			string(TurnRunning), string(TurnInterrupted), pgText(owner), now.Add(ttl).UnixNano(), now.UnixNano())
		if err != nil {
			return err
		}
		won, err := collectRows(rows, scanKey)
		rows.Close()
		if err != nil {
			return err
		}
		var teams, channels, threads []string
		for _, k := range won {
			teams, channels, threads = append(teams, k.Team), append(channels, k.Channel), append(threads, k.Thread)
			out = append(out, Claim{Key: k})
		}
		if len(out) == 0 {
			return nil
		}
		turns, err := pgQueryAll(ctx, tx, scanTurn, `SELECT `+turnColumns+`
			JOIN unnest($1::text[], $2::text[], $3::text[]) AS c (team, channel, thread)
				ON c.team = s.team AND c.channel = s.channel AND c.thread = s.thread
			WHERE t.state IN ($4, $5)`, teams, channels, threads, string(TurnRunning), string(TurnInterrupted))
		if err != nil {
			return err
		}
		byKey := make(map[Key]int, len(out))
		for i, c := range out {
			byKey[c.Key] = i
		}
		for _, t := range turns {
			i := byKey[t.Key]
			out[i].Turns = append(out[i].Turns, t)
		}
		for i := range out {
			slices.SortFunc(out[i].Turns, byStarted)
		}
		slices.SortFunc(out, byOldestTurn)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim unfinished threads: %w", err)
	}
	return out, nil
}

// Enqueue takes (or fails to take) the lease first: either way the lease
// row stays locked until the message is committed, so a holder's
// NextPending that would release the thread waits and then sees it.
func (s *Postgres) Enqueue(ctx context.Context, key Key, id string, data []byte, owner string, ttl time.Duration) (bool, error) {
	if err := checkEnqueue(key, id); err != nil {
		return false, err
	}
	if data == nil {
		data = []byte{}
	}
	var ok bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if ok, err = s.takeLease(ctx, tx, key, owner, ttl); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO pending (team, channel, thread, id, data, enqueued) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (team, channel, thread, id) DO NOTHING`,
			key.Team, key.Channel, key.Thread, pgText(id), data, s.now().UnixNano()); err != nil {
			return fmt.Errorf("insert message: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("enqueue %s on %s: %w", id, key, err)
	}
	return ok, nil
}

func (s *Postgres) NextPending(ctx context.Context, key Key, owner string, done int64) (Pending, bool, error) {
	var p Pending
	var ok bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		ok = false
		var holder string
		err := tx.QueryRow(ctx, `SELECT owner FROM leases WHERE team = $1 AND channel = $2 AND thread = $3 FOR UPDATE`,
			key.Team, key.Channel, key.Thread).Scan(&holder)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && holder != owner) {
			return ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM pending WHERE team = $1 AND channel = $2 AND thread = $3 AND seq <= $4`,
			key.Team, key.Channel, key.Thread, done); err != nil {
			return fmt.Errorf("drop handled messages: %w", err)
		}
		var enqueued int64
		err = tx.QueryRow(ctx, `SELECT seq, id, data, enqueued FROM pending
			WHERE team = $1 AND channel = $2 AND thread = $3 ORDER BY seq LIMIT 1`,
			key.Team, key.Channel, key.Thread).Scan(&p.Seq, &p.ID, &p.Data, &enqueued)
		if errors.Is(err, pgx.ErrNoRows) {
			_, err = tx.Exec(ctx, `DELETE FROM leases WHERE team = $1 AND channel = $2 AND thread = $3`, key.Team, key.Channel, key.Thread)
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

func (s *Postgres) RequestStop(ctx context.Context, turnID, user string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE turns SET stop_by = CASE WHEN stop_by = '' THEN $1 ELSE stop_by END WHERE id = $2 AND state = $3`,
		pgText(user), pgText(turnID), string(TurnRunning))
	if err != nil {
		return false, fmt.Errorf("request a stop of turn %s: %w", turnID, err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Postgres) StopRequested(ctx context.Context, turnID string) (string, error) {
	var user string
	err := s.pool.QueryRow(ctx, `SELECT stop_by FROM turns WHERE id = $1`, pgText(turnID)).Scan(&user)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("look for a stop request on turn %s: %w", turnID, err)
	}
	return user, nil
}

func (s *Postgres) ThreadBusy(ctx context.Context, key Key) (bool, error) {
	var busy bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pending WHERE team = $1 AND channel = $2 AND thread = $3)
		OR EXISTS (SELECT 1 FROM leases WHERE team = $1 AND channel = $2 AND thread = $3 AND expires > $4)`,
		key.Team, key.Channel, key.Thread, s.now().UnixNano()).Scan(&busy)
	if err != nil {
		return false, fmt.Errorf("look for work on thread %s: %w", key, err)
	}
	return busy, nil
}
