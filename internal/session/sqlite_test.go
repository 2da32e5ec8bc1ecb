package session

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/llm"
)

func openTestSQLite(t testing.TB, path string, opts SQLiteOptions) *SQLite {
	t.Helper()
	st, err := OpenSQLite(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// stores opens each backend with the given limits, for behaviour that is
// configured rather than part of the shared contract.
func stores(t *testing.T, lim Limits) map[string]Store {
	return map[string]Store{
		"memory": NewMemoryWith(MemoryOptions{Limits: lim}),
		"sqlite": openTestSQLite(t, filepath.Join(t.TempDir(), "s.db"), SQLiteOptions{Limits: lim}),
	}
}

var testKey = Key{Team: "T", Channel: "C", Thread: "1.0"}

func TestLimitsElideOversizeMessages(t *testing.T) {
	const max = 300
	big := "HEAD-" + strings.Repeat("é", 2000) + "-TAIL"
	for name, st := range stores(t, Limits{MaxMessageBytes: max}) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			if err := st.StartTurn(ctx, Turn{ID: "t1", Key: testKey}, "r", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
				t.Fatal(err)
			}
			step := []llm.Message{
				{Role: llm.RoleAssistant, Reasoning: big, ToolCalls: []llm.ToolCall{{ID: "c", Name: "read_file", Arguments: `{}`}}},
				{Role: llm.RoleTool, ToolCallID: "c", Content: big},
			}
			if err := st.AppendStep(ctx, "t1", step, llm.Usage{}); err != nil {
				t.Fatal(err)
			}
			s, _, _ := st.Session(ctx, testKey)
			got := s.History[2].Content
			if len(got) > max || !strings.HasPrefix(got, "HEAD-") || !strings.HasSuffix(got, "-TAIL") || !strings.Contains(got, "bytes elided") {
				t.Errorf("stored tool result = %d bytes %q; want at most %d with head, tail and a note", len(got), got, max)
			}
			if !strings.ContainsRune(got, 'é') || strings.ContainsRune(got, '\uFFFD') {
				t.Errorf("elision cut inside a rune: %q", got)
			}
			if s.History[1].Reasoning != big {
				t.Error("reasoning was clipped; it must be kept as received")
			}
		})
	}
}

func TestLimitsDropOldestWholeTurns(t *testing.T) {
	for name, st := range stores(t, Limits{MaxMessages: 6}) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			turn := func(id string, steps int) error {
				if err := st.StartTurn(ctx, Turn{ID: id, Key: testKey}, "r", llm.Message{Role: llm.RoleUser, Content: "q " + id}); err != nil {
					return err
				}
				for i := range steps {
					msgs := []llm.Message{
						{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "list_files"}}},
						{Role: llm.RoleTool, ToolCallID: "c", Content: id},
					}
					if i == steps-1 {
						msgs = []llm.Message{{Role: llm.RoleAssistant, Content: "a " + id}}
					}
					if err := st.AppendStep(ctx, id, msgs, llm.Usage{}); err != nil {
						return err
					}
				}
				return st.EndTurn(ctx, id, TurnDone, "")
			}
			// t1: 1+2+1 = 4 messages, t2: 2. Then t3 pushes the total past 6:
			// all of t1 goes, even the part that alone would have made room.
			for _, id := range []string{"t1", "t2"} {
				steps := map[string]int{"t1": 2, "t2": 1}[id]
				if err := turn(id, steps); err != nil {
					t.Fatal(err)
				}
			}
			if err := turn("t3", 1); err != nil {
				t.Fatal(err)
			}
			s, _, _ := st.Session(ctx, testKey)
			var roles []string
			for _, m := range s.History {
				roles = append(roles, string(m.Role)+":"+m.Content)
			}
			want := []string{"user:q t2", "assistant:a t2", "user:q t3", "assistant:a t3"}
			if d := cmp.Diff(want, roles); d != "" {
				t.Errorf("history after trimming (-want +got):\n%s", d)
			}
			// One turn alone over the limit cannot be trimmed: refuse it.
			if err := st.StartTurn(ctx, Turn{ID: "t4", Key: testKey}, "r", llm.Message{Role: llm.RoleUser, Content: "q t4"}); err != nil {
				t.Fatal(err)
			}
			var err error
			for range 4 {
				if err = st.AppendStep(ctx, "t4", []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c"}}}, {Role: llm.RoleTool, ToolCallID: "c"}}, llm.Usage{}); err != nil {
					break
				}
			}
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("AppendStep past the limit within one turn: err = %v; want ErrTooLarge", err)
			}
		})
	}
}

func TestSQLiteSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	for range 3 { // reopening applies nothing twice
		st := openTestSQLite(t, path, SQLiteOptions{})
		st.Close()
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var versions int
	var mode string
	if err := raw.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != len(migrations) {
		t.Errorf("schema_migrations has %d rows after 3 opens; want %d", versions, len(migrations))
	}
	if err := raw.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal (it persists in the file)", mode, err)
	}

	// A file written by a newer build is refused, not silently misread.
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, applied) VALUES (?, 0)`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSQLite(t.Context(), path, SQLiteOptions{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("OpenSQLite on a newer schema: err = %v; want a refusal naming the newer version", err)
	}
}

func TestSQLiteForeignKeysAndPurgeRows(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	st := openTestSQLite(t, filepath.Join(t.TempDir(), "s.db"), SQLiteOptions{Now: func() time.Time { return now }})
	ctx := t.Context()
	if err := st.StartTurn(ctx, Turn{ID: "t1", Key: testKey}, "r", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.FirstSeen(ctx, "k", time.Minute); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if _, err := st.Purge(ctx, now); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"sessions", "messages", "turns", "dedupe"} {
		var n int
		if err := st.r.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s has %d rows after Purge; want 0", table, n)
		}
	}
}

// TestSQLiteWaitsForAnotherProcess holds the write lock from a separate
// connection, as a backup or an operator's shell would: the store's write
// waits (busy_timeout) instead of failing with SQLITE_BUSY, and with a
// timeout shorter than the hold it fails with an error that says so.
func TestSQLiteWaitsForAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	patient := openTestSQLite(t, path, SQLiteOptions{BusyTimeout: 10 * time.Second})
	hasty := openTestSQLite(t, path, SQLiteOptions{BusyTimeout: time.Millisecond})

	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	if _, err := hasty.FirstSeen(t.Context(), "k0", time.Hour); err == nil {
		t.Error("write under another process's lock with a 1ms busy timeout succeeded; want a busy error")
	}
	done := make(chan error, 1)
	go func() { _, err := patient.FirstSeen(context.Background(), "k1", time.Hour); done <- err }()
	time.Sleep(100 * time.Millisecond) // let the write start waiting on the lock
	if _, err := conn.ExecContext(t.Context(), `COMMIT`); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("write waiting on another process's lock: %v; want success once the lock is released", err)
	}
}
