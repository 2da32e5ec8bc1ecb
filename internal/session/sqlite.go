package session

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

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
	// People's ratings of answers (see Feedbacks): one per user and turn.
	`CREATE TABLE feedback (
		turn_id TEXT NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
		user_id TEXT NOT NULL,
		rating TEXT NOT NULL,
		reason TEXT NOT NULL DEFAULT '',
		comment TEXT NOT NULL DEFAULT '',
		repo TEXT NOT NULL DEFAULT '',
		commit_sha TEXT NOT NULL DEFAULT '',
		at INTEGER NOT NULL,
		PRIMARY KEY (turn_id, user_id)
	) WITHOUT ROWID;
	CREATE INDEX feedback_at ON feedback (at);`,
	// What usage is counted by (see UsageTotals, UserTurns): the repository and the
	// model of each turn, and indexes for summing a period's turns by
	// time, user, repository or thread (a channel's threads come from
	// sessions' own index). Older turns take their session's repo.
	`ALTER TABLE turns ADD COLUMN repo TEXT NOT NULL DEFAULT '';
	ALTER TABLE turns ADD COLUMN model TEXT NOT NULL DEFAULT '';
	UPDATE turns SET repo = (SELECT repo FROM sessions WHERE sessions.id = turns.session_id);
	CREATE INDEX turns_started ON turns (started);
	CREATE INDEX turns_user_started ON turns (user_id, started);
	CREATE INDEX turns_repo_started ON turns (repo, started);
	CREATE INDEX turns_session_started ON turns (session_id, started);`,
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

// queryAll runs query on db and scans each row with scan.
func queryAll[T any](ctx context.Context, db *sql.DB, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return collectRows(rows, scan)
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
	out, err := queryAll(ctx, s.r, scanSession, `SELECT `+sessionColumns+`
		FROM sessions ORDER BY updated DESC, team, channel, thread LIMIT ?`, limit)
	if err != nil {
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
