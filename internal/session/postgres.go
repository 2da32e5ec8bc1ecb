package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/askrepo/askrepo/internal/llm"
)

// PostgresOptions configures a PostgreSQL store.
type PostgresOptions struct {
	// Now is the store's clock; nil means time.Now. Every time the store
	// writes or compares (turn times, dedupe and lease expiry) comes from
	// it, never from the server's now(), so replicas agree on what they
	// wrote and tests can move time.
	Now func() time.Time
	// Limits bounds the stored history; see Limits.
	Limits Limits
	// Schema is the schema the store keeps its tables in, created if
	// missing. Empty means the DSN's search_path (by default "public").
	// Tests give each case its own.
	Schema string
	// MaxConns caps the pool; zero means pgxpool's default (4 or the
	// number of CPUs, whichever is more).
	MaxConns int32
}

// Postgres is a Store in a PostgreSQL database, shared by every replica of
// the service. It is safe for concurrent use, from one process or many.
//
// Each method is one transaction at READ COMMITTED. The rows a write
// depends on are locked first (the turn, then its session), so writes to
// one thread queue behind each other while other threads go on; unique
// keys and INSERT … ON CONFLICT decide every race between replicas (a turn
// ID, a dedupe key, a lease). A transaction that loses a deadlock or a
// serialization check is run again, up to three times.
//
// Times are stored as Unix nanoseconds, as in SQLite, so both stores give
// back exactly what they were given. PostgreSQL text cannot hold NUL bytes
// or invalid UTF-8; such bytes in a message are stored as U+FFFD.
type Postgres struct {
	pool   *pgxpool.Pool
	now    func() time.Time
	limits Limits
	schema string // quoted, or empty for the search_path's

	closeOnce sync.Once
}

var _ Backend = (*Postgres)(nil)

// migrateLock is the advisory lock every replica takes while migrating, so
// replicas starting at once apply each migration exactly once. The second
// key is the schema's hash, so stores in different schemas do not wait on
// each other.
const migrateLock = 0x61736b72 // "askr"

// postgresMigrations are the schema, in order; migration i moves the
// database to version i+1. Append only: a released migration never changes.
var postgresMigrations = []string{
	`CREATE TABLE sessions (
		id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		team text NOT NULL,
		channel text NOT NULL,
		thread text NOT NULL,
		repo text NOT NULL DEFAULT '',
		commit_sha text NOT NULL DEFAULT '',
		created bigint NOT NULL,
		updated bigint NOT NULL,
		prompt_tokens bigint NOT NULL DEFAULT 0,
		cached_prompt_tokens bigint NOT NULL DEFAULT 0,
		completion_tokens bigint NOT NULL DEFAULT 0,
		turns bigint NOT NULL DEFAULT 0,
		UNIQUE (team, channel, thread)
	);
	CREATE INDEX sessions_updated ON sessions (updated);
	CREATE TABLE messages (
		session_id bigint NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		seq bigint NOT NULL,
		role text NOT NULL,
		content text NOT NULL DEFAULT '',
		reasoning text NOT NULL DEFAULT '',
		tool_call_id text NOT NULL DEFAULT '',
		is_error boolean NOT NULL DEFAULT false,
		tool_calls text NOT NULL DEFAULT '',
		PRIMARY KEY (session_id, seq)
	);
	CREATE TABLE turns (
		id text PRIMARY KEY,
		session_id bigint NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
		state text NOT NULL,
		user_id text NOT NULL DEFAULT '',
		question text NOT NULL DEFAULT '',
		msg_ts text NOT NULL DEFAULT '',
		started bigint NOT NULL,
		ended bigint NOT NULL DEFAULT 0,
		steps bigint NOT NULL DEFAULT 0,
		prompt_tokens bigint NOT NULL DEFAULT 0,
		cached_prompt_tokens bigint NOT NULL DEFAULT 0,
		completion_tokens bigint NOT NULL DEFAULT 0,
		err_ref text NOT NULL DEFAULT ''
	);
	CREATE INDEX turns_session ON turns (session_id);
	CREATE INDEX turns_state_started ON turns (state, started);
	CREATE TABLE dedupe (
		key text PRIMARY KEY,
		expires bigint NOT NULL
	);
	CREATE INDEX dedupe_expires ON dedupe (expires);
	CREATE TABLE leases (
		team text NOT NULL,
		channel text NOT NULL,
		thread text NOT NULL,
		owner text NOT NULL,
		expires bigint NOT NULL,
		PRIMARY KEY (team, channel, thread)
	);
	CREATE TABLE pending (
		seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		team text NOT NULL,
		channel text NOT NULL,
		thread text NOT NULL,
		id text NOT NULL,
		data bytea NOT NULL,
		enqueued bigint NOT NULL,
		UNIQUE (team, channel, thread, id)
	);
	CREATE INDEX pending_thread ON pending (team, channel, thread, seq);`,
	// Who pressed Stop on a running turn, for the replica running it (see Stops).
	`ALTER TABLE turns ADD COLUMN stop_by text NOT NULL DEFAULT '';`,
	// Events recorded before they are acknowledged (see Inbox), and the
	// Slack ts of each answer part posted (Turn.Parts, space-separated).
	`CREATE TABLE inbox (
		key text PRIMARY KEY,
		data bytea NOT NULL,
		owner text NOT NULL,
		held bigint NOT NULL,
		received bigint NOT NULL,
		expires bigint NOT NULL,
		handled boolean NOT NULL DEFAULT false
	);
	CREATE INDEX inbox_open ON inbox (received) WHERE NOT handled;
	CREATE INDEX inbox_expires ON inbox (expires);
	ALTER TABLE turns ADD COLUMN parts text NOT NULL DEFAULT '';`,
}

// OpenPostgres connects to the database at dsn (a postgres:// URL or a
// key=value string) and brings its schema up to date. The DSN's password
// never appears in an error.
func OpenPostgres(ctx context.Context, dsn string, opts PostgresOptions) (*Postgres, error) {
	where := RedactDSN(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("open session store %s: %w", where, err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	schema := ""
	if opts.Schema != "" {
		schema = pgx.Identifier{opts.Schema}.Sanitize()
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "askrepo"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open session store %s: %w", where, err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := &Postgres{pool: pool, now: now, limits: opts.Limits, schema: schema}
	if err := s.migrate(ctx, opts.Schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open session store %s: %w", where, err)
	}
	return s, nil
}

// RedactDSN returns dsn (a URL or a key=value string) with its password
// replaced by "xxxxx", for logs and errors. A URL that does not parse is
// reduced to its scheme.
func RedactDSN(dsn string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err != nil {
			scheme, _, _ := strings.Cut(dsn, "://")
			return scheme + "://[unparsable DSN]"
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		return u.String()
	}
	// key=value form: drop the password's value, quoted or not.
	var out []string
	for _, f := range strings.Fields(dsn) {
		if strings.HasPrefix(f, "password=") {
			f = "password=xxxxx"
		}
		out = append(out, f)
	}
	return strings.Join(out, " ")
}

// migrate applies the migrations the database has not seen, all in one
// transaction under the advisory lock: a replica that starts while another
// migrates waits, then finds the work done. PostgreSQL's DDL is
// transactional, so a crash leaves the schema as it was.
func (s *Postgres) migrate(ctx context.Context, schema string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrateLock, schema); err != nil {
			return fmt.Errorf("take the migration lock: %w", err)
		}
		if s.schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+s.schema); err != nil {
				return fmt.Errorf("create schema %s: %w", s.schema, err)
			}
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY,
			applied bigint NOT NULL
		)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var newest int
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&newest); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if newest > len(postgresMigrations) {
			return fmt.Errorf("schema version %d is newer than this build knows (%d): run a newer build or use another schema", newest, len(postgresMigrations))
		}
		for i := newest; i < len(postgresMigrations); i++ {
			if _, err := tx.Exec(ctx, postgresMigrations[i]); err != nil {
				return fmt.Errorf("migrate schema to version %d: %w", i+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied) VALUES ($1, $2)`, i+1, s.now().UnixNano()); err != nil {
				return fmt.Errorf("record schema version %d: %w", i+1, err)
			}
		}
		return nil
	})
}

// tx runs fn in a transaction, again if it lost a deadlock or a
// serialization check (fn must be safe to repeat: it only touches tx).
func (s *Postgres) tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	var err error
	for range 3 {
		err = pgx.BeginFunc(ctx, s.pool, fn)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != "40P01" && pe.Code != "40001") {
			return err
		}
	}
	return err
}

// pgText makes s storable as PostgreSQL text.
func pgText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

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
		calls := ""
		if len(m.ToolCalls) > 0 {
			b, err := json.Marshal(m.ToolCalls)
			if err != nil {
				return pgMessages{}, fmt.Errorf("encode tool calls of message %d: %w", i, err)
			}
			calls = string(b)
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
	max := int64(s.limits.maxMessages())
	if max == 0 || n <= max {
		return nil
	}
	var cut *int64
	if err := tx.QueryRow(ctx, `SELECT MIN(seq) FROM messages WHERE session_id = $1 AND role = $2 AND seq >=
		(SELECT seq FROM messages WHERE session_id = $1 ORDER BY seq LIMIT 1 OFFSET $3)`,
		sessionID, string(llm.RoleUser), n-max).Scan(&cut); err != nil {
		return fmt.Errorf("find trim point: %w", err)
	}
	if cut == nil {
		return fmt.Errorf("history of %d messages is over the limit of %d even after dropping older turns: %w", n, max, ErrTooLarge)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM messages WHERE session_id = $1 AND seq < $2`, sessionID, *cut); err != nil {
		return fmt.Errorf("drop old turns: %w", err)
	}
	return nil
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
		m.Role = llm.Role(role)
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
				return Session{}, false, fmt.Errorf("decode tool calls of message %d of %s: %w", len(out.History), key, err)
			}
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
	if t.ID == "" {
		return fmt.Errorf("start turn: empty turn ID")
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
		started := nanos(t.Started)
		if started == 0 {
			started = now
		}
		// The turn goes in before the message: a known ID rolls the whole
		// transaction back, history included.
		tag, err := tx.Exec(ctx, `INSERT INTO turns (id, session_id, state, user_id, question, msg_ts, started)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
			t.ID, id, string(TurnRunning), pgText(t.User), pgText(t.Question), pgText(t.MsgTS), started)
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
	if errors.Is(err, pgx.ErrNoRows) {
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
	if !state.Ended() {
		return fmt.Errorf("end turn %s: %q is not a final state (use done, failed or stopped, or SetTurnState)", turnID, state)
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
	if next.ID == "" {
		return fmt.Errorf("continue turn %s: empty turn ID", oldID)
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		sid, err := s.liveTurn(ctx, tx, oldID)
		if err != nil {
			return err
		}
		now := s.now().UnixNano()
		started := nanos(next.Started)
		if started == 0 {
			started = now
		}
		tag, err := tx.Exec(ctx, `INSERT INTO turns (id, session_id, state, user_id, question, msg_ts, started,
			steps, prompt_tokens, cached_prompt_tokens, completion_tokens, parts)
			SELECT $1, session_id, $2, user_id, question, msg_ts, $3, steps, prompt_tokens, cached_prompt_tokens, completion_tokens, parts
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

func (s *Postgres) queryTurns(ctx context.Context, q pgx.Tx, sql string, args ...any) ([]Turn, error) {
	var rows pgx.Rows
	var err error
	if q != nil {
		rows, err = q.Query(ctx, sql, args...)
	} else {
		rows, err = s.pool.Query(ctx, sql, args...)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Turn
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func (s *Postgres) Unfinished(ctx context.Context) ([]Turn, error) {
	out, err := s.queryTurns(ctx, nil, `SELECT `+turnColumns+` WHERE t.state IN ($1, $2) ORDER BY t.started, t.id`,
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

// FirstSeen is one statement: the insert wins, or the update of an expired
// key wins, or nothing changes. ON CONFLICT locks the existing row and
// checks the expiry on its newest version, so of replicas racing on one
// event exactly one sees a row affected.
func (s *Postgres) FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	now := s.now()
	tag, err := s.pool.Exec(ctx, `INSERT INTO dedupe (key, expires) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET expires = excluded.expires WHERE dedupe.expires <= $3`,
		pgText(key), now.Add(ttl).UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("record dedupe key: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

func (s *Postgres) Sessions(ctx context.Context, limit int) ([]Session, error) {
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `SELECT team, channel, thread, repo, commit_sha, created, updated,
		prompt_tokens, cached_prompt_tokens, completion_tokens, turns
		FROM sessions ORDER BY updated DESC, team, channel, thread LIMIT $1`, lim)
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
func (s *Postgres) Purge(ctx context.Context, before time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE updated < $1`, before.UnixNano())
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if _, err := tx.Exec(ctx, `DELETE FROM dedupe WHERE expires <= $1`, s.now().UnixNano()); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM inbox WHERE expires <= $1`, s.now().UnixNano())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge sessions idle since %s: %w", before.Format(time.RFC3339), err)
	}
	return int(n), nil
}

func (s *Postgres) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}

// Close closes the pool, waiting for connections in use to be returned;
// a second call does nothing.
func (s *Postgres) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}
