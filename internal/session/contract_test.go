package session_test

import (
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
