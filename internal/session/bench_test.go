package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// benchStep is one tool step as the agent produces it: an assistant message
// with three calls and three results of about 2 KB each.
func benchStep(n int) []llm.Message {
	body := strings.Repeat("42\tfunc (s *Server) handle(w http.ResponseWriter, r *http.Request) {\n", 30)[:2048]
	msgs := []llm.Message{{Role: llm.RoleAssistant, Reasoning: "I need the handler and its tests."}}
	for c := range 3 {
		id := fmt.Sprintf("call_%d_%d", n, c)
		msgs[0].ToolCalls = append(msgs[0].ToolCalls, llm.ToolCall{ID: id, Name: "read_file", Arguments: `{"path":"internal/server/handler.go","offset":40}`})
		msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: body})
	}
	return msgs
}

func benchStores(b *testing.B) map[string]func() Store {
	return map[string]func() Store{
		"memory":   func() Store { return NewMemory() },
		"sqlite":   func() Store { return openTestSQLite(b, filepath.Join(b.TempDir(), "s.db"), SQLiteOptions{}) },
		"postgres": func() Store { return openBenchPostgres(b) },
	}
}

// benchNames are the stores to measure: PostgreSQL only where
// ASKREPO_TEST_POSTGRES names a database (see .ci/run).
func benchNames() []string {
	if os.Getenv("ASKREPO_TEST_POSTGRES") == "" {
		return []string{"memory", "sqlite"}
	}
	return []string{"memory", "sqlite", "postgres"}
}

// openBenchPostgres opens a store in a fresh schema, dropped afterwards.
func openBenchPostgres(b *testing.B) Store {
	dsn := os.Getenv("ASKREPO_TEST_POSTGRES")
	schema := fmt.Sprintf("askrepo_bench_%d", time.Now().UnixNano())
	st, err := OpenPostgres(b.Context(), dsn, PostgresOptions{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx := context.Background()
		defer st.Close()
		if _, err := st.pool.Exec(ctx, `DROP SCHEMA `+st.schema+` CASCADE`); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return st
}

// BenchmarkAppendStep measures persisting one step; a new thread is started
// every 50 steps (outside the timer) so the history stays a realistic size.
func BenchmarkAppendStep(b *testing.B) {
	for _, name := range benchNames() {
		b.Run(name, func(b *testing.B) {
			st := benchStores(b)[name]()
			ctx := b.Context()
			step := benchStep(0)
			turn := ""
			i := 0
			for b.Loop() {
				if i%50 == 0 {
					b.StopTimer()
					turn = fmt.Sprintf("t%d", i)
					key := Key{Team: "T", Channel: "C", Thread: turn}
					if err := st.StartTurn(ctx, Turn{ID: turn, Key: key}, "r", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if err := st.AppendStep(ctx, turn, step, llm.Usage{PromptTokens: 3000, CompletionTokens: 80}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkLoadSession measures Session on a 200-message thread (50 steps
// of 4 messages), what the service reads before every turn.
func BenchmarkLoadSession(b *testing.B) {
	for _, name := range benchNames() {
		b.Run(name, func(b *testing.B) {
			st := benchStores(b)[name]()
			ctx := b.Context()
			key := Key{Team: "T", Channel: "C", Thread: "1.0"}
			if err := st.StartTurn(ctx, Turn{ID: "t", Key: key}, "r", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
				b.Fatal(err)
			}
			for s := range 50 {
				msgs := benchStep(s)
				if s == 49 {
					msgs = msgs[:3] // 1 + 49*4 + 3 = 200 messages
				}
				if err := st.AppendStep(ctx, "t", msgs, llm.Usage{}); err != nil {
					b.Fatal(err)
				}
			}
			if s, _, _ := st.Session(ctx, key); len(s.History) != 200 {
				b.Fatalf("history has %d messages; want 200", len(s.History))
			}
			for b.Loop() {
				if _, _, err := st.Session(ctx, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReceive measures what recording an event costs the read loop
// before its ack (Slack allows 3 s): one Receive of a new key, as a
// question of about 300 bytes arrives.
func BenchmarkReceive(b *testing.B) {
	data := []byte(`{"Key":{"team":"T1","channel":"C1","thread":"1700000000.000100"},"EventID":"Ev01","User":"U1","TS":"1700000000.000100","Text":"` +
		strings.Repeat("where is the retry policy set? ", 7) + `","IM":false,"FollowUp":false}`)
	for _, name := range benchNames() {
		b.Run(name, func(b *testing.B) {
			st := benchStores(b)[name]()
			ctx := b.Context()
			i := 0
			for b.Loop() {
				first, err := st.Receive(ctx, fmt.Sprintf("msg:T1:C1:%d.000100", i), data, "replica-a", 30*time.Second, 2*time.Hour)
				if err != nil || !first {
					b.Fatalf("Receive = %v, %v", first, err)
				}
				i++
			}
		})
	}
}
