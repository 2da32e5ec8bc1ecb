package session_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/session/sessiontest"
)

func TestMemoryContract(t *testing.T) {
	sessiontest.RunStoreTests(t, sessiontest.Suite{
		Open: func(t *testing.T, dir string, now func() time.Time) session.Store {
			return session.NewMemoryWith(session.MemoryOptions{Now: now})
		},
	})
}

func TestSQLiteContract(t *testing.T) {
	sessiontest.RunStoreTests(t, sessiontest.Suite{
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
}
