package session

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/askrepo/askrepo/internal/llm"
)

// The SQLite store's sessions, their history and their turns: each write
// is one write transaction on the single writer connection (see SQLite).

// encode clips messages and marshals their tool calls before a
// transaction starts, so the write lock is held only for the inserts.
func (s *SQLite) encode(msgs []llm.Message) ([]encoded, error) {
	out := make([]encoded, len(msgs))
	for i, m := range msgs {
		calls, err := encodeCalls(i, m)
		if err != nil {
			return nil, err
		}
		out[i] = encoded{Message: s.limits.clip(m), calls: calls}
	}
	return out, nil
}

type encoded struct {
	llm.Message
	calls string // JSON of ToolCalls, empty for none
}

// appendMessages adds msgs after the session's last message and drops the
// oldest whole turns past the message limit (see Limits).
func (s *SQLite) appendMessages(ctx context.Context, tx *sql.Tx, sessionID int64, msgs []encoded) error {
	var last, count int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), -1), COUNT(*) FROM messages WHERE session_id = ?`, sessionID).Scan(&last, &count); err != nil {
		return fmt.Errorf("read history length: %w", err)
	}
	if len(msgs) > 0 {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO messages (session_id, seq, role, content, reasoning, tool_call_id, is_error, tool_calls)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i, m := range msgs {
			if _, err := stmt.ExecContext(ctx, sessionID, last+1+int64(i), string(m.Role), m.Content, m.Reasoning, m.ToolCallID, m.IsError, m.calls); err != nil {
				return fmt.Errorf("insert message: %w", err)
			}
		}
	}
	n := count + int64(len(msgs))
	max, over := s.limits.overLimit(n)
	if !over {
		return nil
	}
	var from int64
	if err := tx.QueryRowContext(ctx, `SELECT seq FROM messages WHERE session_id = ? ORDER BY seq LIMIT 1 OFFSET ?`, sessionID, n-max).Scan(&from); err != nil {
		return fmt.Errorf("find trim point: %w", err)
	}
	var cut sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MIN(seq) FROM messages WHERE session_id = ? AND seq >= ? AND role = ?`, sessionID, from, string(llm.RoleUser)).Scan(&cut); err != nil {
		return fmt.Errorf("find trim point: %w", err)
	}
	if !cut.Valid {
		return errOverLimit(n, max)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE session_id = ? AND seq < ?`, sessionID, cut.Int64); err != nil {
		return fmt.Errorf("drop old turns: %w", err)
	}
	return nil
}

func (s *SQLite) Session(ctx context.Context, key Key) (Session, bool, error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return Session{}, false, fmt.Errorf("load session %s: %w", key, err)
	}
	defer tx.Rollback()
	var id int64
	out := Session{Key: key}
	var created, updated int64
	err = tx.QueryRowContext(ctx, `SELECT id, repo, commit_sha, created, updated, prompt_tokens, cached_prompt_tokens, completion_tokens, turns
		FROM sessions WHERE team = ? AND channel = ? AND thread = ?`, key.Team, key.Channel, key.Thread).
		Scan(&id, &out.Repo, &out.Commit, &created, &updated, &out.Usage.PromptTokens, &out.Usage.CachedPromptTokens, &out.Usage.CompletionTokens, &out.Turns)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("load session %s: %w", key, err)
	}
	out.Created, out.Updated = fromNanos(created), fromNanos(updated)
	rows, err := tx.QueryContext(ctx, `SELECT role, content, reasoning, tool_call_id, is_error, tool_calls
		FROM messages WHERE session_id = ? ORDER BY seq`, id)
	if err != nil {
		return Session{}, false, fmt.Errorf("load history of %s: %w", key, err)
	}
	defer rows.Close()
	var role string
	var calls []byte
	for rows.Next() {
		var m llm.Message
		if err := rows.Scan(&role, &m.Content, &m.Reasoning, &m.ToolCallID, &m.IsError, &calls); err != nil {
			return Session{}, false, fmt.Errorf("load history of %s: %w", key, err)
		}
		if err := decodeMessage(&m, role, calls, key, len(out.History)); err != nil {
			return Session{}, false, err
		}
		out.History = append(out.History, m)
	}
	if err := rows.Err(); err != nil {
		return Session{}, false, fmt.Errorf("load history of %s: %w", key, err)
	}
	return out, true, nil
}

func (s *SQLite) SessionInfo(ctx context.Context, key Key) (Session, bool, error) {
	out, err := scanSession(s.r.QueryRowContext(ctx, `SELECT `+sessionColumns+`
		FROM sessions WHERE team = ? AND channel = ? AND thread = ?`, key.Team, key.Channel, key.Thread))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, fmt.Errorf("look up session %s: %w", key, err)
	}
	return out, true, nil
}

func (s *SQLite) StartTurn(ctx context.Context, t Turn, repo string, userMsg llm.Message) error {
	if err := checkStartTurn(t); err != nil {
		return err
	}
	enc, err := s.encode([]llm.Message{userMsg})
	if err != nil {
		return fmt.Errorf("start turn %s: %w", t.ID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		now := s.now().UnixNano()
		var dup int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM turns WHERE id = ?`, t.ID).Scan(&dup); err != nil {
			return err
		}
		if dup > 0 {
			return ErrTurnExists
		}
		var id int64
		err := tx.QueryRowContext(ctx, `INSERT INTO sessions (team, channel, thread, repo, created, updated) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (team, channel, thread) DO UPDATE SET updated = excluded.updated
			RETURNING id`, t.Key.Team, t.Key.Channel, t.Key.Thread, repo, now, now).Scan(&id)
		if err != nil {
			return fmt.Errorf("upsert session: %w", err)
		}
		if err := s.appendMessages(ctx, tx, id, enc); err != nil {
			return err
		}
		started := startedAt(t, now)
		_, err = tx.ExecContext(ctx, `INSERT INTO turns (id, session_id, state, user_id, question, msg_ts, started, repo, model)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, t.ID, id, string(TurnRunning), t.User, t.Question, t.MsgTS, started, repo, t.Model)
		if err != nil {
			return fmt.Errorf("insert turn: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("start turn %s: %w", t.ID, err)
	}
	return nil
}

// liveTurn returns the session of a turn that may still be written to.
func liveTurn(ctx context.Context, tx *sql.Tx, turnID string) (sessionID int64, err error) {
	var state string
	err = tx.QueryRowContext(ctx, `SELECT session_id, state FROM turns WHERE id = ?`, turnID).Scan(&sessionID, &state)
	missing := errors.Is(err, sql.ErrNoRows)
	if err != nil && !missing {
		return 0, err
	}
	if err := liveState(missing, TurnState(state)); err != nil {
		return 0, err
	}
	return sessionID, nil
}

func (s *SQLite) AppendStep(ctx context.Context, turnID string, msgs []llm.Message, usage llm.Usage) error {
	enc, err := s.encode(msgs)
	if err != nil {
		return fmt.Errorf("append step to turn %s: %w", turnID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		sid, err := liveTurn(ctx, tx, turnID)
		if err != nil {
			return err
		}
		if err := s.appendMessages(ctx, tx, sid, enc); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET updated = ?,
			prompt_tokens = prompt_tokens + ?, cached_prompt_tokens = cached_prompt_tokens + ?, completion_tokens = completion_tokens + ?
			WHERE id = ?`, s.now().UnixNano(), usage.PromptTokens, usage.CachedPromptTokens, usage.CompletionTokens, sid); err != nil {
			return fmt.Errorf("update session totals: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET steps = steps + 1,
			prompt_tokens = prompt_tokens + ?, cached_prompt_tokens = cached_prompt_tokens + ?, completion_tokens = completion_tokens + ?
			WHERE id = ?`, usage.PromptTokens, usage.CachedPromptTokens, usage.CompletionTokens, turnID); err != nil {
			return fmt.Errorf("update turn totals: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append step to turn %s: %w", turnID, err)
	}
	return nil
}

func (s *SQLite) EndTurn(ctx context.Context, turnID string, state TurnState, errRef string) error {
	if err := checkEndTurn(turnID, state); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		sid, err := liveTurn(ctx, tx, turnID)
		if err != nil {
			return err
		}
		now := s.now().UnixNano()
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET state = ?, err_ref = ?, ended = ? WHERE id = ?`, string(state), errRef, now, turnID); err != nil {
			return err
		}
		done := 0
		if state == TurnDone {
			done = 1
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET turns = turns + ?, updated = ? WHERE id = ?`, done, now, sid)
		return err
	})
	if err != nil {
		return fmt.Errorf("end turn %s: %w", turnID, err)
	}
	return nil
}

func (s *SQLite) SetTurnState(ctx context.Context, turnID string, state TurnState) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		sid, err := liveTurn(ctx, tx, turnID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET state = ? WHERE id = ?`, string(state), turnID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET updated = ? WHERE id = ?`, s.now().UnixNano(), sid)
		return err
	})
	if err != nil {
		return fmt.Errorf("set state of turn %s: %w", turnID, err)
	}
	return nil
}

// ContinueTurn is one write transaction: SQLite runs one writer at a time,
// so of two concurrent claims the second sees old ended and fails.
func (s *SQLite) ContinueTurn(ctx context.Context, oldID string, next Turn) error {
	if err := checkContinueTurn(oldID, next); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		sid, err := liveTurn(ctx, tx, oldID)
		if err != nil {
			return err
		}
		var dup int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM turns WHERE id = ?`, next.ID).Scan(&dup); err != nil {
			return err
		}
		if dup > 0 {
			return ErrTurnExists
		}
		now := s.now().UnixNano()
		started := startedAt(next, now)
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET state = ?, ended = ? WHERE id = ?`, string(TurnContinued), now, oldID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO turns (id, session_id, state, user_id, question, msg_ts, started,
			steps, prompt_tokens, cached_prompt_tokens, completion_tokens, parts, repo, model)
			SELECT ?, session_id, ?, user_id, question, msg_ts, ?, steps, prompt_tokens, cached_prompt_tokens, completion_tokens, parts, repo, model
			FROM turns WHERE id = ?`, next.ID, string(TurnRunning), started, oldID); err != nil {
			return fmt.Errorf("insert turn: %w", err)
		}
		_, err = tx.ExecContext(ctx, `UPDATE sessions SET updated = ? WHERE id = ?`, now, sid)
		return err
	})
	if err != nil {
		return fmt.Errorf("continue turn %s as %s: %w", oldID, next.ID, err)
	}
	return nil
}

// touchSession moves a session's Updated and returns its id.
func (s *SQLite) touchSession(ctx context.Context, tx *sql.Tx, key Key, set string, args ...any) (int64, error) {
	var id int64
	args = append(append([]any{s.now().UnixNano()}, args...), key.Team, key.Channel, key.Thread)
	err := tx.QueryRowContext(ctx, `UPDATE sessions SET updated = ?`+set+` WHERE team = ? AND channel = ? AND thread = ? RETURNING id`, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	return id, err
}

func (s *SQLite) ReplaceHistory(ctx context.Context, key Key, history []llm.Message) error {
	enc, err := s.encode(history)
	if err != nil {
		return fmt.Errorf("replace history of %s: %w", key, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		id, err := s.touchSession(ctx, tx, key, "")
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE session_id = ?`, id); err != nil {
			return err
		}
		return s.appendMessages(ctx, tx, id, enc)
	})
	if err != nil {
		return fmt.Errorf("replace history of %s: %w", key, err)
	}
	return nil
}

func (s *SQLite) SetCommit(ctx context.Context, key Key, commit string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.touchSession(ctx, tx, key, ", commit_sha = ?", commit)
		return err
	})
	if err != nil {
		return fmt.Errorf("set commit of %s: %w", key, err)
	}
	return nil
}

func (s *SQLite) Unfinished(ctx context.Context) ([]Turn, error) {
	out, err := queryAll(ctx, s.r, scanTurn, `SELECT `+turnColumns+` WHERE t.state IN (?, ?) ORDER BY t.started, t.id`,
		string(TurnRunning), string(TurnInterrupted))
	if err != nil {
		return nil, fmt.Errorf("list unfinished turns: %w", err)
	}
	return out, nil
}

func (s *SQLite) Turn(ctx context.Context, turnID string) (Turn, error) {
	t, err := scanTurn(s.r.QueryRowContext(ctx, `SELECT `+turnColumns+` WHERE t.id = ?`, turnID))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Turn{}, fmt.Errorf("turn %s: %w", turnID, err)
	}
	return t, nil
}
