package turn

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
)

// withTickets is readme with one more tool, as a channel that offers an
// MCP server's tools has.
type withTickets struct{ readme }

func (withTickets) Definitions() []tools.Definition {
	return append(readme{}.Definitions(), tools.Definition{Name: "tickets__search", Parameters: []byte(`{"type":"object"}`)})
}

// The tools a turn offers depend on where its question was asked, and
// ToolNames holds every tool any turn offered, whichever came first.
func TestToolsByChannel(t *testing.T) {
	store := session.NewMemory()
	model := &scriptModel{}
	var asked []string
	r, err := New(Config{Store: store, Agent: agent.Config{Model: model},
		Tools: func(_ context.Context, _ *repos.Lease, channel string) agent.Toolbox {
			asked = append(asked, channel)
			if channel == "C1" {
				return withTickets{}
			}
			return readme{}
		},
		Now: func() time.Time { return stopped }})
	if err != nil {
		t.Fatal(err)
	}
	for i, channel := range []string{"", "C1", "C2"} {
		key := session.Key{Team: "T", Channel: "X", Thread: channel}
		loaded, err := r.Load(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(t.Context(), Request{Key: key, Session: loaded, Lease: &repos.Lease{}, Repo: "widget",
			Channel: channel, Question: "what is it?", TurnID: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"", "C1", "C2"}; !slices.Equal(asked, want) {
		t.Errorf("Tools asked for channels %q, want %q", asked, want)
	}
	var offered []string
	for _, req := range model.requests() {
		var names []string
		for _, s := range req.Tools {
			names = append(names, s.Name)
		}
		if set := strings.Join(names, ","); !slices.Contains(offered, set) {
			offered = append(offered, set)
		}
	}
	if len(offered) != 2 {
		t.Errorf("tool sets offered: %v, want the terminal's and C1's", offered)
	}
	if got, want := r.ToolNames(), []string{tools.ReadFileName, "tickets__search"}; !slices.Equal(got, want) {
		t.Errorf("ToolNames = %v, want %v", got, want)
	}
}
