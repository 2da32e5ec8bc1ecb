package session_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/session/sessiontest"
)

func TestUsageContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		sessiontest.RunUsageTests(t, sessiontest.Suite{
			Open: func(t *testing.T, dir string, now func() time.Time) session.Store {
				return session.NewMemoryWith(session.MemoryOptions{Now: now})
			},
		})
	})
	t.Run("sqlite", func(t *testing.T) {
		sessiontest.RunUsageTests(t, sessiontest.Suite{
			Open: func(t *testing.T, dir string, now func() time.Time) session.Store {
				st, err := session.OpenSQLite(t.Context(), filepath.Join(dir, "sessions.db"), session.SQLiteOptions{Now: now})
				if err != nil {
					t.Fatalf("OpenSQLite: %v", err)
				}
				return st
			},
			Durable: true,
			Shared:  true,
		})
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := postgresDSN(t)
		sessiontest.RunUsageTests(t, sessiontest.Suite{
			Open: func(t *testing.T, dir string, now func() time.Time) session.Store {
				return openTestPostgres(t, dsn, testSchema(t, dsn, dir), now)
			},
			Durable: true,
			Shared:  true,
		})
	})
}
