package session_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/session/sessiontest"
)

// postgresDSN returns the test database, or skips: the PostgreSQL suite
// needs a real server, which .ci/run installs and starts. Under CI a skip
// would pass unseen (go test shows skips only with -v), so there it fails.
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("ASKREPO_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but ASKREPO_TEST_POSTGRES is not: the PostgreSQL suite would be skipped; .ci/run starts a server and sets it")
		}
		t.Skip("set ASKREPO_TEST_POSTGRES=postgres://user:password@127.0.0.1:5432/db?sslmode=disable to run the PostgreSQL suite (see .ci/run)")
	}
	return dsn
}

// testSchema names a schema after dir, so each case gets its own and a
// reopen of the same dir finds its data. The schema is dropped when the
// test ends.
func testSchema(t testing.TB, dsn, dir string) string {
	sum := sha256.Sum256([]byte(dir))
	schema := "askrepo_test_" + hex.EncodeToString(sum[:8])
	if _, loaded := dropped.LoadOrStore(schema, true); !loaded {
		t.Cleanup(func() { dropSchema(t, dsn, schema) })
	}
	return schema
}

var dropped sync.Map

func dropSchema(t testing.TB, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}

func openTestPostgres(t testing.TB, dsn, schema string, now func() time.Time) *session.Postgres {
	t.Helper()
	st, err := session.OpenPostgres(context.Background(), dsn, session.PostgresOptions{Now: now, Schema: schema, MaxConns: 8})
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	return st
}

func TestPostgresContract(t *testing.T) {
	dsn := postgresDSN(t)
	sessiontest.RunStoreTests(t, sessiontest.Suite{
		Open: func(t *testing.T, dir string, now func() time.Time) session.Store {
			return openTestPostgres(t, dsn, testSchema(t, dsn, dir), now)
		},
		Durable: true,
		Shared:  true,
	})
}

// TestPostgresConcurrentMigrations starts several replicas on one empty
// schema at once: each must come up, and the schema must be migrated once.
func TestPostgresConcurrentMigrations(t *testing.T) {
	dsn := postgresDSN(t)
	schema := testSchema(t, dsn, t.TempDir())
	const replicas = 6
	var wg sync.WaitGroup
	stores := make([]*session.Postgres, replicas)
	errs := make([]error, replicas)
	start := make(chan struct{})
	for i := range replicas {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = session.OpenPostgres(t.Context(), dsn, session.PostgresOptions{Schema: schema, MaxConns: 2})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: OpenPostgres: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n, max int
	if err := conn.QueryRow(t.Context(), `SELECT COUNT(*), MAX(version) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != max || n == 0 {
		t.Errorf("schema_migrations has %d rows up to version %d; want each version once", n, max)
	}
	// Every replica writes to the one schema.
	key := session.Key{Team: "T", Channel: "C", Thread: "1.0"}
	for i, st := range stores {
		if err := st.StartTurn(t.Context(), session.Turn{ID: fmt.Sprint(i), Key: key}, "r", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
			t.Fatalf("replica %d: StartTurn: %v", i, err)
		}
	}
	s, _, err := stores[0].Session(t.Context(), key)
	if err != nil || len(s.History) != replicas {
		t.Errorf("history = %d messages, %v; want one per replica (%d)", len(s.History), err, replicas)
	}
}

// TestPostgresNewerSchema refuses to run on a schema a newer build migrated:
// its tables may mean something this build does not know.
func TestPostgresNewerSchema(t *testing.T) {
	dsn := postgresDSN(t)
	schema := testSchema(t, dsn, t.TempDir())
	openTestPostgres(t, dsn, schema, nil).Close()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (version, applied) VALUES (999, 0)`); err != nil {
		t.Fatal(err)
	}
	_, err = session.OpenPostgres(t.Context(), dsn, session.PostgresOptions{Schema: schema})
	if err == nil || !strings.Contains(err.Error(), "newer than this build") {
		t.Errorf("OpenPostgres on a newer schema: err = %v; want a refusal naming the version", err)
	}
}

// TestPostgresUnstorableText: PostgreSQL text refuses NUL and invalid
// UTF-8, which a tool result may carry; the store keeps the rest of the
// message instead of failing the turn.
func TestPostgresUnstorableText(t *testing.T) {
	dsn := postgresDSN(t)
	st := openTestPostgres(t, dsn, testSchema(t, dsn, t.TempDir()), nil)
	defer st.Close()
	key := session.Key{Team: "T", Channel: "C", Thread: "1.0"}
	if err := st.StartTurn(t.Context(), session.Turn{ID: "t", Key: key}, "r", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	bad := llm.Message{Role: llm.RoleTool, ToolCallID: "c", Content: "a\x00b\xffc"}
	if err := st.AppendStep(t.Context(), "t", []llm.Message{bad}, llm.Usage{}); err != nil {
		t.Fatalf("AppendStep with NUL and invalid UTF-8: %v", err)
	}
	s, _, err := st.Session(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.History[1].Content, "a\uFFFDb\uFFFDc"; got != want {
		t.Errorf("stored content = %q; want %q", got, want)
	}
}

func TestPostgresOpenErrorsHidePassword(t *testing.T) {
	tests := []struct {
		name, dsn string
	}{
		{"refused connection", "postgres://bob:s3cret-pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"},
		{"bad port", "postgres://bob:s3cret-pw@127.0.0.1:notaport/db"},
		{"key value", "host=127.0.0.1 port=1 user=bob password=s3cret-pw dbname=db sslmode=disable connect_timeout=2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := session.OpenPostgres(t.Context(), tc.dsn, session.PostgresOptions{})
			if err == nil {
				t.Fatal("OpenPostgres succeeded; want an error")
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

func TestRedactDSN(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://bob:pw@db:5432/askrepo?sslmode=disable", "postgres://bob:xxxxx@db:5432/askrepo?sslmode=disable"},
		{"postgresql://bob@db/askrepo", "postgresql://bob@db/askrepo"},
		{"postgres://db/askrepo?password=pw&sslmode=require", "postgres://db/askrepo?password=xxxxx&sslmode=require"},
		{"host=db user=bob password=pw dbname=askrepo", "host=db user=bob password=xxxxx dbname=askrepo"},
		{"postgres://bob:pw@db:%zz/x", "postgres://[unparsable DSN]"},
		{"mysql://bob:pw@db/x", "mysql://bob:xxxxx@db/x"},
	}
	for _, tc := range tests {
		if got := session.RedactDSN(tc.in); got != tc.want {
			t.Errorf("RedactDSN(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestOpenSpec(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		spec    string
		want    string // type of the store, or "" for an error
		errHint string
	}{
		{"", "*session.SQLite", ""},
		{"sqlite", "*session.SQLite", ""},
		{"memory", "*session.Memory", ""},
		{"redis://u:hunter2@x", "", "not a store"},
		{"postgres://bob:hunter2@127.0.0.1:1/db?sslmode=disable&connect_timeout=2", "", "127.0.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			st, err := session.Open(t.Context(), tc.spec, dir, session.Options{})
			if tc.want == "" {
				if err == nil {
					st.Close()
					t.Fatal("Open succeeded; want an error")
				}
				if !strings.Contains(err.Error(), tc.errHint) || strings.Contains(err.Error(), "hunter2") {
					t.Errorf("err = %v; want it to mention %q and not the password", err, tc.errHint)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if got := fmt.Sprintf("%T", st); got != tc.want {
				t.Errorf("Open(%q) = %s; want %s", tc.spec, got, tc.want)
			}
		})
	}
	if _, err := os.Stat(dir + "/" + session.SQLiteFile); err != nil {
		t.Errorf("the SQLite store is not at the data dir's %s: %v", session.SQLiteFile, err)
	}
	if _, err := session.Open(t.Context(), "sqlite", "", session.Options{}); err == nil || !strings.Contains(err.Error(), "BOT_DATA_DIR") {
		t.Errorf("Open(sqlite) without a data dir: err = %v; want a hint naming BOT_DATA_DIR", err)
	}
}

// TestOpenPostgresSpec checks BOT_STORE=postgres://… reaches PostgreSQL,
// in the schema the DSN's search_path names.
func TestOpenPostgresSpec(t *testing.T) {
	dsn := postgresDSN(t)
	schema := testSchema(t, dsn, t.TempDir())
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	st, err := session.Open(t.Context(), dsn+sep+"search_path="+schema, "", session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(*session.Postgres); !ok {
		t.Errorf("Open(postgres DSN) = %T; want *session.Postgres", st)
	}
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT COUNT(*) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&n); err != nil || n == 0 {
		t.Errorf("schema_migrations in %s: %d rows, %v; want the store's tables in the DSN's search_path", schema, n, err)
	}
}
