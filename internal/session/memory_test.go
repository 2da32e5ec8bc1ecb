package session

import (
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// TestMemoryCopies checks that neither what a caller passed in nor what it
// got back shares memory with the store.
func TestMemoryCopies(t *testing.T) {
	ctx := t.Context()
	m := NewMemory()
	key := Key{Team: "T", Channel: "C", Thread: "1.0"}
	if err := m.StartTurn(ctx, Turn{ID: "t1", Key: key}, "repo", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	step := []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{}`}}}}
	if err := m.AppendStep(ctx, "t1", step, llm.Usage{}); err != nil {
		t.Fatal(err)
	}
	step[0].ToolCalls[0].Name = "mutated by caller"

	s, _, _ := m.Session(ctx, key)
	s.History[0].Content = "mutated by reader"
	s.History[1].ToolCalls[0].ID = "mutated by reader"

	got, _, _ := m.Session(ctx, key)
	if got.History[0].Content != "q" || got.History[1].ToolCalls[0].Name != "read_file" || got.History[1].ToolCalls[0].ID != "c1" {
		t.Fatalf("store history changed through a caller's slice: %+v", got.History)
	}
}

func TestMemoryFirstSeenTTL(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	m := NewMemoryWith(MemoryOptions{Now: func() time.Time { return now }})
	ctx := t.Context()
	for i, tc := range []struct {
		advance time.Duration
		want    bool
	}{{0, true}, {0, false}, {9 * time.Minute, false}, {time.Minute, true}, {0, false}} {
		now = now.Add(tc.advance)
		got, err := m.FirstSeen(ctx, "ev1", 10*time.Minute)
		if err != nil || got != tc.want {
			t.Fatalf("call %d: FirstSeen = %v, %v; want %v", i, got, err, tc.want)
		}
	}
}
