package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/llm"

	// modernc.org/sqlite is SQLite translated to Go: no cgo, so the binary
	// stays static and cross-compiles like any Go program.
	_ "modernc.org/sqlite"
)

// SQLiteOptions configures a SQLite store.
type SQLiteOptions struct {
	// Now is the store's clock; nil means time.Now.
	Now func() time.Time
	// Limits bounds the stored history; see Limits.
	Limits Limits
	// BusyTimeout is how long a write waits for another process holding the
	// database (a backup, an operator's sqlite3 shell) before failing.
	// Zero means 5s. Writers inside this process never wait on each other
	// through SQLite: they share one connection.
	BusyTimeout time.Duration
	// MaxReaders caps the read connections; zero means 4. WAL mode lets
	// them read while the writer writes.
	MaxReaders int
}

// SQLite is a Store in one SQLite file, for a single replica that must keep
// its threads across restarts. It is safe for concurrent use.
//
// All writes go through one connection (database/sql queues callers for it)
// and each write is one BEGIN IMMEDIATE transaction, so writers of this
// process never meet SQLITE_BUSY; reads use a separate pool and, in WAL
// mode, do not block or get blocked by the writer. History is stored one
// row per message, so a step is an append, not a rewrite of the thread.
// A message's fields are columns and only its tool calls are JSON: decoding
// a whole message from JSON made loading a 200-message thread 4× slower,
// since tool results are large and full of escapes (see BENCHMARKS.md).
type SQLite struct {
	w, r   *sql.DB
	now    func() time.Time
	limits Limits

	closeOnce sync.Once
	closeErr  error
}

var _ Backend = (*SQLite)(nil)

// migrations are the schema, in order; migration i moves the database to
// version i+1. Append only: a released migration never changes.
var migrations = []string{
	`CREATE TABLE sessions (
		id INTEGER PRIMARY KEY,
		team TEXT NOT NULL,
		channel TEXT NOT NULL,
		thread TEXT NOT NULL,
		repo TEXT NOT NULL DEFAULT '',
		commit_sha TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		updated INTEGER NOT NULL,
		prompt_tokens INTEGER NOT NULL DEFAULT 0,
		cached_prompt_tokens INTEGER NOT NULL DEFAULT 0,
		completion_tokens INTEGER NOT NULL DEFAULT 0,
		turns INTEGER NOT NULL DEFAULT 0,
		UNIQUE (team, channel, thread)
	);
	CREATE INDEX sessions_updated ON sessions (updated);
	CREATE TABLE messages (
		session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		seq INTEGER NOT NULL,
		role TEXT NOT NULL,
		content TEXT NOT NULL DEFAULT '',
		reasoning TEXT NOT NULL DEFAULT '',
		tool_call_id TEXT NOT NULL DEFAULT '',
		is_error INTEGER NOT NULL DEFAULT 0,
		tool_calls TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (session_id, seq)
	) WITHOUT ROWID;
	CREATE TABLE turns (
		id TEXT PRIMARY KEY,
		session_id INTEGER NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		state TEXT NOT NULL,
		user_id TEXT NOT NULL DEFAULT '',
		question TEXT NOT NULL DEFAULT '',
		msg_ts TEXT NOT NULL DEFAULT '',
		started INTEGER NOT NULL,
		ended INTEGER NOT NULL DEFAULT 0,
		steps INTEGER NOT NULL DEFAULT 0,
		prompt_tokens INTEGER NOT NULL DEFAULT 0,
		cached_prompt_tokens INTEGER NOT NULL DEFAULT 0,
		completion_tokens INTEGER NOT NULL DEFAULT 0,
		err_ref TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX turns_session ON turns (session_id);
	CREATE INDEX turns_state_started ON turns (state, started);
	CREATE TABLE dedupe (
		key TEXT PRIMARY KEY,
		expires INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE INDEX dedupe_expires ON dedupe (expires);`,
	// Thread leases and per-thread queues (see Leases and Queue).
	`CREATE TABLE leases (
		team TEXT NOT NULL,
		channel TEXT NOT NULL,
		thread TEXT NOT NULL,
		owner TEXT NOT NULL,
		expires INTEGER NOT NULL,
		PRIMARY KEY (team, channel, thread)
	) WITHOUT ROWID;
	CREATE TABLE pending (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		team TEXT NOT NULL,
		channel TEXT NOT NULL,
		thread TEXT NOT NULL,
		id TEXT NOT NULL,
		data BLOB NOT NULL,
		enqueued INTEGER NOT NULL,
		UNIQUE (team, channel, thread, id)
	);
	CREATE INDEX pending_thread ON pending (team, channel, thread, seq);`,
	// Who pressed Stop on a running turn, for the process running it (see Stops).
	`ALTER TABLE turns ADD COLUMN stop_by TEXT NOT NULL DEFAULT '';`,
	// Events recorded before they are acknowledged (see Inbox), and the
	// Slack ts of each answer part posted (Turn.Parts, space-separated).
	`CREATE TABLE inbox (
		key TEXT PRIMARY KEY,
		data BLOB NOT NULL,
		owner TEXT NOT NULL,
		held INTEGER NOT NULL,
		received INTEGER NOT NULL,
		expires INTEGER NOT NULL,
		handled INTEGER NOT NULL DEFAULT 0
	) WITHOUT ROWID;
	CREATE INDEX inbox_open ON inbox (received) WHERE handled = 0;
	CREATE INDEX inbox_expires ON inbox (expires);
	ALTER TABLE turns ADD COLUMN parts TEXT NOT NULL DEFAULT '';`,
}

// OpenSQLite opens (creating if needed) the store at path and brings its
// schema up to date. The directory must exist.
func OpenSQLite(ctx context.Context, path string, opts SQLiteOptions) (*SQLite, error) {
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	readers := opts.MaxReaders
	if readers <= 0 {
		readers = 4
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	dsn := func(extra url.Values) string {
		q := url.Values{}
		q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
		q.Add("_pragma", "foreign_keys(1)")
		// NORMAL is durable across process crashes in WAL mode; a power cut
		// may lose the last commits, never corrupt the file.
		q.Add("_pragma", "synchronous(NORMAL)")
		for k, vs := range extra {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
		// A plain path (not a file: URI): the driver splits it at '?' and
		// opens the part before it as a file name.
		return path + "?" + q.Encode()
	}
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("open session store: path %q must be a file name without '?'", path)
	}

	// BEGIN IMMEDIATE takes the write lock at the start of a transaction, so
	// a transaction that reads before it writes cannot fail on upgrade.
	w, err := sql.Open("sqlite", dsn(url.Values{"_pragma": {"journal_mode(WAL)"}, "_txlock": {"immediate"}}))
	if err != nil {
		return nil, fmt.Errorf("open session store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &SQLite{w: w, now: now, limits: opts.Limits}
	// The writer connects first: it switches the file to WAL before any
	// reader opens it.
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open session store %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", dsn(url.Values{"_pragma": {"query_only(1)"}}))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open session store %s: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s.r = r
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open session store %s: %w", path, err)
	}
	return s, nil
}

// migrate applies the migrations the database has not seen, each in its own
// transaction with its version row, so a crash mid-way leaves a consistent
// version and a restart picks up from there.
func (s *SQLite) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		applied INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for i, m := range migrations {
		version := i + 1
		err := s.write(ctx, func(tx *sql.Tx) error {
			var done int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, version).Scan(&done); err != nil {
				return err
			}
			if done > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied) VALUES (?, ?)`, version, s.now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate schema to version %d: %w", version, err)
		}
	}
	var newest int
	if err := s.w.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if newest > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this build knows (%d): run a newer build or use another file", newest, len(migrations))
	}
	return nil
}

// write runs fn in one write transaction.
func (s *SQLite) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

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

// encode clips messages and marshals their tool calls before a
// transaction starts, so the write lock is held only for the inserts.
func (s *SQLite) encode(msgs []llm.Message) ([]encoded, error) {
	out := make([]encoded, len(msgs))
	for i, m := range msgs {
		e := encoded{Message: s.limits.clip(m)}
		if len(m.ToolCalls) > 0 {
			b, err := json.Marshal(m.ToolCalls)
			if err != nil {
				return nil, fmt.Errorf("encode tool calls of message %d: %w", i, err)
			}
			e.calls = string(b)
		}
		out[i] = e
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
	max := int64(s.limits.maxMessages())
	if max == 0 || n <= max {
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
		return fmt.Errorf("history of %d messages is over the limit of %d even after dropping older turns: %w", n, max, ErrTooLarge)
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
		m.Role = llm.Role(role)
		if len(calls) > 0 {
			if err := json.Unmarshal(calls, &m.ToolCalls); err != nil {
				return Session{}, false, fmt.Errorf("decode tool calls of message %d of %s: %w", len(out.History), key, err)
			}
		}
		out.History = append(out.History, m)
	}
	if err := rows.Err(); err != nil {
		return Session{}, false, fmt.Errorf("load history of %s: %w", key, err)
	}
	return out, true, nil
}

func (s *SQLite) StartTurn(ctx context.Context, t Turn, repo string, userMsg llm.Message) error {
	if t.ID == "" {
		return fmt.Errorf("start turn: empty turn ID")
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
		started := nanos(t.Started)
		if started == 0 {
			started = now
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO turns (id, session_id, state, user_id, question, msg_ts, started)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, t.ID, id, string(TurnRunning), t.User, t.Question, t.MsgTS, started)
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
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	if TurnState(state).Ended() {
		return 0, fmt.Errorf("state %s: %w", state, ErrTurnEnded)
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
	if !state.Ended() {
		return fmt.Errorf("end turn %s: %q is not a final state (use done, failed or stopped, or SetTurnState)", turnID, state)
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
	if next.ID == "" {
		return fmt.Errorf("continue turn %s: empty turn ID", oldID)
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
		started := nanos(next.Started)
		if started == 0 {
			started = now
		}
		if _, err := tx.ExecContext(ctx, `UPDATE turns SET state = ?, ended = ? WHERE id = ?`, string(TurnContinued), now, oldID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO turns (id, session_id, state, user_id, question, msg_ts, started,
			steps, prompt_tokens, cached_prompt_tokens, completion_tokens, parts)
			SELECT ?, session_id, ?, user_id, question, msg_ts, ?, steps, prompt_tokens, cached_prompt_tokens, completion_tokens, parts
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

const turnColumns = `t.id, s.team, s.channel, s.thread, t.state, t.user_id, t.question, t.msg_ts, t.started, t.ended,
	t.steps, t.prompt_tokens, t.cached_prompt_tokens, t.completion_tokens, t.err_ref, t.parts
	FROM turns t JOIN sessions s ON s.id = t.session_id`

func scanTurn(sc interface{ Scan(...any) error }) (Turn, error) {
	var t Turn
	var state string
	var started, ended int64
	var parts string
	err := sc.Scan(&t.ID, &t.Key.Team, &t.Key.Channel, &t.Key.Thread, &state, &t.User, &t.Question, &t.MsgTS, &started, &ended,
		&t.Steps, &t.Usage.PromptTokens, &t.Usage.CachedPromptTokens, &t.Usage.CompletionTokens, &t.ErrRef, &parts)
	if parts != "" {
		t.Parts = strings.Fields(parts)
	}
	t.State = TurnState(state)
	t.Started, t.Ended = fromNanos(started), fromNanos(ended)
	return t, err
}

func (s *SQLite) Unfinished(ctx context.Context) ([]Turn, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+turnColumns+` WHERE t.state IN (?, ?) ORDER BY t.started, t.id`,
		string(TurnRunning), string(TurnInterrupted))
	if err != nil {
		return nil, fmt.Errorf("list unfinished turns: %w", err)
	}
	defer rows.Close()
	var out []Turn
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, fmt.Errorf("list unfinished turns: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
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

// FirstSeen is one statement: the insert wins, or the update of an expired
// key wins, or nothing changes; the affected row count says which.
func (s *SQLite) FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	now := s.now()
	res, err := s.w.ExecContext(ctx, `INSERT INTO dedupe (key, expires) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET expires = excluded.expires WHERE dedupe.expires <= ?`,
		key, now.Add(ttl).UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("record dedupe key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("record dedupe key: %w", err)
	}
	return n == 1, nil
}

func (s *SQLite) Sessions(ctx context.Context, limit int) ([]Session, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.QueryContext(ctx, `SELECT team, channel, thread, repo, commit_sha, created, updated,
		prompt_tokens, cached_prompt_tokens, completion_tokens, turns
		FROM sessions ORDER BY updated DESC, team, channel, thread LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var x Session
		var created, updated int64
		if err := rows.Scan(&x.Key.Team, &x.Key.Channel, &x.Key.Thread, &x.Repo, &x.Commit, &created, &updated,
			&x.Usage.PromptTokens, &x.Usage.CachedPromptTokens, &x.Usage.CompletionTokens, &x.Turns); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		x.Created, x.Updated = fromNanos(created), fromNanos(updated)
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// Purge deletes idle sessions; their turns and messages go with them by
// ON DELETE CASCADE.
func (s *SQLite) Purge(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE updated < ?`, before.UnixNano())
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM dedupe WHERE expires <= ?`, s.now().UnixNano()); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM inbox WHERE expires <= ?`, s.now().UnixNano())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge sessions idle since %s: %w", before.Format(time.RFC3339), err)
	}
	return int(n), nil
}

func (s *SQLite) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("session store writer: %w", err)
	}
	if s.r != nil {
		if err := s.r.PingContext(ctx); err != nil {
			return fmt.Errorf("session store reader: %w", err)
		}
	}
	return nil
}

// Close closes the connections; a second call returns the first's result.
func (s *SQLite) Close() error {
	s.closeOnce.Do(func() {
		var rerr error
		if s.r != nil {
			rerr = s.r.Close()
		}
		s.closeErr = errors.Join(rerr, s.w.Close())
	})
	return s.closeErr
}
