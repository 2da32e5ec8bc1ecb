package mcp_test

import (
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/mcp"
	"github.com/askrepo/askrepo/internal/session"
)

func TestEndCutOff(t *testing.T) {
	store := session.NewMemory()
	now := time.Now()
	for _, tr := range []session.Turn{
		{ID: "cut", Key: session.Key{Team: mcp.Team, Channel: "ci", Thread: "a"}, Started: now.Add(-time.Hour)},
		{ID: "running", Key: session.Key{Team: mcp.Team, Channel: "ci", Thread: "b"}, Started: now},
		{ID: "slack", Key: session.Key{Team: "T1", Channel: "C1", Thread: "1.2"}, Started: now.Add(-time.Hour)},
	} {
		if err := store.StartTurn(t.Context(), tr, "alpha", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := mcp.EndCutOff(t.Context(), store, now.Add(-10*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("ended %d, %v; want 1", n, err)
	}
	left, err := store.Unfinished(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tr := range left {
		ids = append(ids, tr.ID)
	}
	if len(ids) != 2 || ids[0] == "cut" || ids[1] == "cut" {
		t.Errorf("unfinished = %v, want the running ask and the Slack turn", ids)
	}
}
