package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// The SQLite and PostgreSQL stores keep the same tables with the same
// columns; only their SQL dialects and drivers differ. What reads a row
// back into a Go value, or turns a value into a column, is the same for
// both and lives here. Statements stay in each store's files: placeholders,
// locking and the shape of a batch insert are where the two differ.

// scanner is one result row: database/sql's *Row and *Rows and pgx's Row
// and Rows all have this Scan.
type scanner interface {
	Scan(dest ...any) error
}

// rowSet is what database/sql's *Rows and pgx.Rows have in common. Close is
// left out (one returns an error, the other does not): the caller that
// opened the rows closes them.
type rowSet interface {
	scanner
	Next() bool
	Err() error
}

// collectRows scans every row of rows with scan, and returns nil and the
// first error if any row or the iteration fails.
func collectRows[T any](rows rowSet, scan func(scanner) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Times are stored as Unix nanoseconds, with 0 for the zero time, so both
// stores give back exactly what they were given.

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// startedAt is when a new turn started: its own Started if set, else now
// (Unix nanoseconds).
func startedAt(t Turn, now int64) int64 {
	if started := nanos(t.Started); started != 0 {
		return started
	}
	return now
}

// encodeCalls is a message's tool calls as stored: JSON, or "" for none.
// i is the message's index in its batch, for the error.
func encodeCalls(i int, m llm.Message) (string, error) {
	if len(m.ToolCalls) == 0 {
		return "", nil
	}
	b, err := json.Marshal(m.ToolCalls)
	if err != nil {
		return "", fmt.Errorf("encode tool calls of message %d: %w", i, err)
	}
	return string(b), nil
}

// decodeMessage completes m, scanned from its other columns, with its role
// and its stored tool calls. i is its index in key's history, for the
// error.
func decodeMessage(m *llm.Message, role string, calls []byte, key Key, i int) error {
	m.Role = llm.Role(role)
	if len(calls) == 0 {
		return nil
	}
	if err := json.Unmarshal(calls, &m.ToolCalls); err != nil {
		return fmt.Errorf("decode tool calls of message %d of %s: %w", i, key, err)
	}
	return nil
}

// sessionColumns are the columns scanSession reads, from sessions.
const sessionColumns = `team, channel, thread, repo, commit_sha, created, updated,
		prompt_tokens, cached_prompt_tokens, completion_tokens, turns`

// scanSession reads a row of sessionColumns: a session without its history.
func scanSession(sc scanner) (Session, error) {
	var x Session
	var created, updated int64
	if err := sc.Scan(&x.Key.Team, &x.Key.Channel, &x.Key.Thread, &x.Repo, &x.Commit, &created, &updated,
		&x.Usage.PromptTokens, &x.Usage.CachedPromptTokens, &x.Usage.CompletionTokens, &x.Turns); err != nil {
		return Session{}, err
	}
	x.Created, x.Updated = fromNanos(created), fromNanos(updated)
	return x, nil
}

// turnColumns selects what scanTurn reads; the query goes on with WHERE.
const turnColumns = `t.id, s.team, s.channel, s.thread, t.state, t.user_id, t.question, t.msg_ts, t.started, t.ended,
	t.steps, t.prompt_tokens, t.cached_prompt_tokens, t.completion_tokens, t.err_ref, t.parts, t.repo, t.model
	FROM turns t JOIN sessions s ON s.id = t.session_id`

func scanTurn(sc scanner) (Turn, error) {
	var t Turn
	var state string
	var started, ended int64
	var parts string
	err := sc.Scan(&t.ID, &t.Key.Team, &t.Key.Channel, &t.Key.Thread, &state, &t.User, &t.Question, &t.MsgTS, &started, &ended,
		&t.Steps, &t.Usage.PromptTokens, &t.Usage.CachedPromptTokens, &t.Usage.CompletionTokens, &t.ErrRef, &parts, &t.Repo, &t.Model)
	if parts != "" {
		t.Parts = strings.Fields(parts)
	}
	t.State = TurnState(state)
	t.Started, t.Ended = fromNanos(started), fromNanos(ended)
	return t, err
}

// scanKey reads a row of team, channel, thread: the key of a thread.
func scanKey(sc scanner) (Key, error) {
	var k Key
	err := sc.Scan(&k.Team, &k.Channel, &k.Thread)
	return k, err
}

// scanReceived reads a row of key, data, received from inbox.
func scanReceived(sc scanner) (Received, error) {
	var r Received
	var received int64
	if err := sc.Scan(&r.Key, &r.Data, &received); err != nil {
		return Received{}, err
	}
	r.Received = fromNanos(received)
	return r, nil
}
