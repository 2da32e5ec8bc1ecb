package session_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/session/sessiontest"
)

// userTurnser is the query the Home tab makes of a store.
type userTurnser interface {
	session.Store
	UserTurns(ctx context.Context, team, user string, since time.Time, limit int) ([]session.Turn, error)
}

func TestUserTurns(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T, now func() time.Time) userTurnser
	}{
		{"memory", func(t *testing.T, now func() time.Time) userTurnser {
			return session.NewMemoryWith(session.MemoryOptions{Now: now})
		}},
		{"sqlite", func(t *testing.T, now func() time.Time) userTurnser {
			st, err := session.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "s.db"), session.SQLiteOptions{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"postgres", func(t *testing.T, now func() time.Time) userTurnser {
			dsn := postgresDSN(t)
			return openTestPostgres(t, dsn, testSchema(t, dsn, t.TempDir()), now)
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			clock := sessiontest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
			st := b.open(t, clock.Now)
			t.Cleanup(func() { st.Close() })
			start := func(id, team, channel, thread, user string) {
				t.Helper()
				tr := session.Turn{ID: id, Key: session.Key{Team: team, Channel: channel, Thread: thread}, User: user, Question: "q " + id}
				if err := st.StartTurn(t.Context(), tr, "repo", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
					t.Fatal(err)
				}
				clock.Advance(time.Minute)
			}
			start("old", "T1", "C1", "1.0", "U1")
			since := clock.Now()
			start("a", "T1", "C1", "2.0", "U1")
			start("other-user", "T1", "C1", "2.0", "U2")
			start("other-team", "T2", "C1", "3.0", "U1")
			start("b", "T1", "D1", "4.0", "U1")
			start("c", "T1", "C1", "2.0", "U1")
			if err := st.AppendStep(t.Context(), "c", []llm.Message{{Role: llm.RoleAssistant, Content: "x"}}, llm.Usage{PromptTokens: 100, CompletionTokens: 7}); err != nil {
				t.Fatal(err)
			}
			if err := st.EndTurn(t.Context(), "c", session.TurnDone, ""); err != nil {
				t.Fatal(err)
			}

			got, err := st.UserTurns(t.Context(), "T1", "U1", since, 0)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, tr := range got {
				ids = append(ids, tr.ID)
			}
			if want := []string{"c", "b", "a"}; !slices.Equal(ids, want) {
				t.Fatalf("UserTurns = %v, want %v (newest first, this user and team, since)", ids, want)
			}
			if c := got[0]; c.State != session.TurnDone || c.Usage.PromptTokens != 100 || c.Usage.CompletionTokens != 7 || c.Key.Channel != "C1" || c.Key.Thread != "2.0" {
				t.Errorf("turn c = %+v", c)
			}
			if got, err := st.UserTurns(t.Context(), "T1", "U1", since, 2); err != nil || len(got) != 2 || got[1].ID != "b" {
				t.Errorf("UserTurns limit 2 = %+v, %v", got, err)
			}
		})
	}
}
