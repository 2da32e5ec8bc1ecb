package session

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
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
	// People's ratings of answers (see Feedbacks): one per user and turn.
	`CREATE TABLE feedback (
		turn_id text NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
		user_id text NOT NULL,
		rating text NOT NULL,
		reason text NOT NULL DEFAULT '',
		comment text NOT NULL DEFAULT '',
		repo text NOT NULL DEFAULT '',
		commit_sha text NOT NULL DEFAULT '',
		at bigint NOT NULL,
		PRIMARY KEY (turn_id, user_id)
	);
	CREATE INDEX feedback_at ON feedback (at);`,
	// What usage is counted by (see UsageTotals, UserTurns): the repository and the
	// model of each turn, and indexes for summing a period's turns by
	// time, user, repository or thread (a channel's threads come from
	// sessions' own index). Older turns take their session's repo.
	`ALTER TABLE turns ADD COLUMN repo text NOT NULL DEFAULT '';
	ALTER TABLE turns ADD COLUMN model text NOT NULL DEFAULT '';
	UPDATE turns SET repo = sessions.repo FROM sessions WHERE sessions.id = turns.session_id;
	CREATE INDEX turns_started ON turns (started);
	CREATE INDEX turns_user_started ON turns (user_id, started);
	CREATE INDEX turns_repo_started ON turns (repo, started);
	CREATE INDEX turns_session_started ON turns (session_id, started);`,
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

// pgQuerier is what a pool and a transaction both offer for reading.
type pgQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgQueryAll runs query on q and scans each row with scan.
func pgQueryAll[T any](ctx context.Context, q pgQuerier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return collectRows(rows, scan)
}

// pgText makes s storable as PostgreSQL text.
func pgText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
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
	out, err := pgQueryAll(ctx, s.pool, scanSession, `SELECT `+sessionColumns+`
		FROM sessions ORDER BY updated DESC, team, channel, thread LIMIT $1`, lim)
	if err != nil {
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
