package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/askrepo/askrepo/internal/llm"
)

// The PostgreSQL store's sessions, their history and their turns: each
// write is one transaction that locks the turn, then its session, first
// (see Postgres).

// pgMessages is a batch of messages as column arrays, for one INSERT …
// SELECT FROM unnest: a step is one round trip however many messages it has.
type pgMessages struct {
	role, content, reasoning, callID, calls []string
	isError                                 []bool
}

func (s *Postgres) encode(msgs []llm.Message) (pgMessages, error) {
	var out pgMessages
	for i, m := range msgs {
		m = s.limits.clip(m)
		calls, err := encodeCalls(i, m)
		if err != nil {
			return pgMessages{}, err
		}
		out.role = append(out.role, pgText(string(m.Role)))
		out.content = append(out.content, pgText(m.Content))
		out.reasoning = append(out.reasoning, pgText(m.Reasoning))
		out.callID = append(out.callID, pgText(m.ToolCallID))
		out.calls = append(out.calls, pgText(calls))
		out.isError = append(out.isError, m.IsError)
	}
	return out, nil
}

// appendMessages adds msgs after the session's last message and drops the
// oldest whole turns past the message limit (see Limits). The caller holds
// the session's row lock, so seq cannot be taken twice.
func (s *Postgres) appendMessages(ctx context.Context, tx pgx.Tx, sessionID int64, msgs pgMessages) error {
	var last, count int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), -1), COUNT(*) FROM messages WHERE session_id = $1`, sessionID).Scan(&last, &count); err != nil {
		return fmt.Errorf("read history length: %w", err)
	}
	if len(msgs.role) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO messages (session_id, seq, role, content, reasoning, tool_call_id, is_error, tool_calls)
			SELECT $1, $2 + m.ord, m.role, m.content, m.reasoning, m.tool_call_id, m.is_error, m.tool_calls
			FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::text[])
				WITH ORDINALITY AS m (role, content, reasoning, tool_call_id, is_error, tool_calls, ord)`,
			sessionID, last, msgs.role, msgs.content, msgs.reasoning, msgs.callID, msgs.isError, msgs.calls); err != nil {
			return fmt.Errorf("insert messages: %w", err)
		}
	}
	n := count + int64(len(msgs.role))
	max, over := s.limits.overLimit(n)
	if !over {
		return nil
	}
	var cut *int64
	if err := tx.QueryRow(ctx, `SELECT MIN(seq) FROM messages WHERE session_id = $1 AND role = $2 AND seq >=
		(SELECT seq FROM messages WHERE session_id = $1 ORDER BY seq LIMIT 1 OFFSET $3)`,
		sessionID, string(llm.RoleUser), n-max).Scan(&cut); err != nil {
		return fmt.Errorf("find trim point: %w", err)
	}
	if cut == nil {
		return errOverLimit(n, max)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM messages WHERE session_id = $1 AND seq < $2`, sessionID, *cut); err != nil {
		return fmt.Errorf("drop old turns: %w", err)
	}
	return nil
}

func (s *Postgres) SessionInfo(ctx context.Context, key Key) (Session, bool, error) {
	out, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+`
		FROM sessions WHERE team = $1 AND channel = $2 AND thread = $3`, key.Team, key.Channel, key.Thread))
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("look up session %s: %w", key, err)
	}
	return out, true, nil
}

// Session reads the session and its history in one statement, so the two
// come from one snapshot without a transaction's extra round trips.
func (s *Postgres) Session(ctx context.Context, key Key) (Session, bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT s.repo, s.commit_sha, s.created, s.updated,
			s.prompt_tokens, s.cached_prompt_tokens, s.completion_tokens, s.turns,
			m.seq, COALESCE(m.role, ''), COALESCE(m.content, ''), COALESCE(m.reasoning, ''),
			COALESCE(m.tool_call_id, ''), COALESCE(m.is_error, false), COALESCE(m.tool_calls, '')
		FROM sessions s LEFT JOIN messages m ON m.session_id = s.id
		WHERE s.team = $1 AND s.channel = $2 AND s.thread = $3
		ORDER BY m.seq`, key.Team, key.Channel, key.Thread)
	if err != nil {
		return Session{}, false, fmt.Errorf("load session %s: %w", key, err)
	}
	defer rows.Close()
	out := Session{Key: key}
	found := false
	var (
		created, updated int64
		seq              *int64
		role, calls      string
	)
	for rows.Next() {
		var m llm.Message
		if err := rows.Scan(&out.Repo, &out.Commit, &created, &updated,
			&out.Usage.PromptTokens, &out.Usage.CachedPromptTokens, &out.Usage.CompletionTokens, &out.Turns,
			&seq, &role, &m.Content, &m.Reasoning, &m.ToolCallID, &m.IsError, &calls); err != nil {
			return Session{}, false, fmt.Errorf("load session %s: %w", key, err)
		}
		found = true
		if seq == nil {
			continue // a session with an empty history
		}
		if err := decodeMessage(&m, role, []byte(calls), key, len(out.History)); err != nil {
			return Session{}, false, err
		}
		out.History = append(out.History, m)
	}
	if err := rows.Err(); err != nil {
		return Session{}, false, fmt.Errorf("load session %s: %w", key, err)
	}
	if !found {
		return Session{}, false, nil
	}
	out.Created, out.Updated = fromNanos(created), fromNanos(updated)
	return out, true, nil
}

func (s *Postgres) StartTurn(ctx context.Context, t Turn, repo string, userMsg llm.Message) error {
	if err := checkStartTurn(t); err != nil {
		return err
	}
	enc, err := s.encode([]llm.Message{userMsg})
	if err != nil {
		return fmt.Errorf("start turn %s: %w", t.ID, err)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		now := s.now().UnixNano()
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO sessions (team, channel, thread, repo, created, updated) VALUES ($1, $2, $3, $4, $5, $5)
			ON CONFLICT (team, channel, thread) DO UPDATE SET updated = excluded.updated
			RETURNING id`, t.Key.Team, t.Key.Channel, t.Key.Thread, pgText(repo), now).Scan(&id)
		if err != nil {
			return fmt.Errorf("upsert session: %w", err)
		}
		started := startedAt(t, now)
		// The turn goes in before the message: a known ID rolls the whole
		// transaction back, history included.
		tag, err := tx.Exec(ctx, `INSERT INTO turns (id, session_id, state, user_id, question, msg_ts, started, repo, model)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
			t.ID, id, string(TurnRunning), pgText(t.User), pgText(t.Question), pgText(t.MsgTS), started, pgText(repo), pgText(t.Model))
		if err != nil {
			return fmt.Errorf("insert turn: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrTurnExists
		}
		return s.appendMessages(ctx, tx, id, enc)
	})
	if err != nil {
		return fmt.Errorf("start turn %s: %w", t.ID, err)
	}
	return nil
}

// liveTurn locks a turn that may still be written to and returns its
// session: a concurrent EndTurn or ContinueTurn waits for this transaction,
// or this one waits and then sees the turn ended.
func (s *Postgres) liveTurn(ctx context.Context, tx pgx.Tx, turnID string) (sessionID int64, err error) {
	var state string
	err = tx.QueryRow(ctx, `SELECT session_id, state FROM turns WHERE id = $1 FOR UPDATE`, turnID).Scan(&sessionID, &state)
	missing := errors.Is(err, pgx.ErrNoRows)
	if err != nil && !missing {
		return 0, err
	}
	if err := liveState(missing, TurnState(state)); err != nil {
		return 0, err
	}
	return sessionID, nil
}

func (s *Postgres) AppendStep(ctx context.Context, turnID string, msgs []llm.Message, usage llm.Usage) error {
	enc, err := s.encode(msgs)
	if err != nil {
		return fmt.Errorf("append step to turn %s: %w", turnID, err)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		sid, err := s.liveTurn(ctx, tx, turnID)
		if err != nil {
			return err
		}
		// Updating the session first takes its row lock before seq is read.
		if _, err := tx.Exec(ctx, `UPDATE sessions SET updated = $1,
			prompt_tokens = prompt_tokens + $2, cached_prompt_tokens = cached_prompt_tokens + $3, completion_tokens = completion_tokens + $4
			WHERE id = $5`, s.now().UnixNano(), usage.PromptTokens, usage.CachedPromptTokens, usage.CompletionTokens, sid); err != nil {
			return fmt.Errorf("update session totals: %w", err)
		}
		if err := s.appendMessages(ctx, tx, sid, enc); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE turns SET steps = steps + 1,
			prompt_tokens = prompt_tokens + $1, cached_prompt_tokens = cached_prompt_tokens + $2, completion_tokens = completion_tokens + $3
			WHERE id = $4`, usage.PromptTokens, usage.CachedPromptTokens, usage.CompletionTokens, turnID); err != nil {
			return fmt.Errorf("update turn totals: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append step to turn %s: %w", turnID, err)
	}
	return nil
}

func (s *Postgres) EndTurn(ctx context.Context, turnID string, state TurnState, errRef string) error {
	if err := checkEndTurn(turnID, state); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		sid, err := s.liveTurn(ctx, tx, turnID)
		if err != nil {
			return err
		}
		now := s.now().UnixNano()
		if _, err := tx.Exec(ctx, `UPDATE turns SET state = $1, err_ref = $2, ended = $3 WHERE id = $4`, string(state), pgText(errRef), now, turnID); err != nil {
			return err
		}
		done := 0
		if state == TurnDone {
			done = 1
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET turns = turns + $1, updated = $2 WHERE id = $3`, done, now, sid)
		return err
	})
	if err != nil {
		return fmt.Errorf("end turn %s: %w", turnID, err)
	}
	return nil
}

func (s *Postgres) SetTurnState(ctx context.Context, turnID string, state TurnState) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		sid, err := s.liveTurn(ctx, tx, turnID)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE turns SET state = $1 WHERE id = $2`, string(state), turnID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET updated = $1 WHERE id = $2`, s.now().UnixNano(), sid)
		return err
	})
	if err != nil {
		return fmt.Errorf("set state of turn %s: %w", turnID, err)
	}
	return nil
}

// ContinueTurn locks the old turn first: of two replicas resuming it, the
// second waits, then finds it continued and gets ErrTurnEnded.
func (s *Postgres) ContinueTurn(ctx context.Context, oldID string, next Turn) error {
	if err := checkContinueTurn(oldID, next); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		sid, err := s.liveTurn(ctx, tx, oldID)
		if err != nil {
			return err
		}
		now := s.now().UnixNano()
		started := startedAt(next, now)
		tag, err := tx.Exec(ctx, `INSERT INTO turns (id, session_id, state, user_id, question, msg_ts, started,
			steps, prompt_tokens, cached_prompt_tokens, completion_tokens, parts, repo, model)
			SELECT $1, session_id, $2, user_id, question, msg_ts, $3, steps, prompt_tokens, cached_prompt_tokens, completion_tokens, parts, repo, model
			FROM turns WHERE id = $4
			ON CONFLICT (id) DO NOTHING`, next.ID, string(TurnRunning), started, oldID)
		if err != nil {
			return fmt.Errorf("insert turn: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return ErrTurnExists
		}
		if _, err := tx.Exec(ctx, `UPDATE turns SET state = $1, ended = $2 WHERE id = $3`, string(TurnContinued), now, oldID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET updated = $1 WHERE id = $2`, now, sid)
		return err
	})
	if err != nil {
		return fmt.Errorf("continue turn %s as %s: %w", oldID, next.ID, err)
	}
	return nil
}

// touchSession moves a session's Updated, locking its row, and returns its id.
func (s *Postgres) touchSession(ctx context.Context, tx pgx.Tx, key Key, set string, args ...any) (int64, error) {
	var id int64
	args = append([]any{s.now().UnixNano(), key.Team, key.Channel, key.Thread}, args...)
	err := tx.QueryRow(ctx, `UPDATE sessions SET updated = $1`+set+` WHERE team = $2 AND channel = $3 AND thread = $4 RETURNING id`, args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	return id, err
}

func (s *Postgres) ReplaceHistory(ctx context.Context, key Key, history []llm.Message) error {
	enc, err := s.encode(history)
	if err != nil {
		return fmt.Errorf("replace history of %s: %w", key, err)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		id, err := s.touchSession(ctx, tx, key, "")
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM messages WHERE session_id = $1`, id); err != nil {
			return err
		}
		return s.appendMessages(ctx, tx, id, enc)
	})
	if err != nil {
		return fmt.Errorf("replace history of %s: %w", key, err)
	}
	return nil
}

func (s *Postgres) SetCommit(ctx context.Context, key Key, commit string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := s.touchSession(ctx, tx, key, ", commit_sha = $5", pgText(commit))
		return err
	})
	if err != nil {
		return fmt.Errorf("set commit of %s: %w", key, err)
	}
	return nil
}

func (s *Postgres) Unfinished(ctx context.Context) ([]Turn, error) {
	out, err := pgQueryAll(ctx, s.pool, scanTurn, `SELECT `+turnColumns+` WHERE t.state IN ($1, $2) ORDER BY t.started, t.id`,
		string(TurnRunning), string(TurnInterrupted))
	if err != nil {
		return nil, fmt.Errorf("list unfinished turns: %w", err)
	}
	return out, nil
}

func (s *Postgres) Turn(ctx context.Context, turnID string) (Turn, error) {
	t, err := scanTurn(s.pool.QueryRow(ctx, `SELECT `+turnColumns+` WHERE t.id = $1`, turnID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Turn{}, fmt.Errorf("turn %s: %w", turnID, err)
	}
	return t, nil
}
