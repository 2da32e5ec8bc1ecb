package mcp

import (
	"context"
	"fmt"
	"time"

	"github.com/askrepo/askrepo/internal/session"
)

// CutStore is what EndCutOff needs of the store; session.Store has it.
type CutStore interface {
	Unfinished(ctx context.Context) ([]session.Turn, error)
	EndTurn(ctx context.Context, turnID string, state session.TurnState, errRef string) error
}

var _ CutStore = session.Store(nil)

// EndCutOff ends as failed the asks a stop cut off: MCP turns still
// running that started before before. Slack's recovery leaves them, as
// their callers went with the process; ended, they no longer show among
// the unfinished turns of every start, and the conversation's next ask
// starts after them. A process still running one (a replica) has had it
// for longer than before allows only if before is earlier than now minus
// BOT_TURN_TIMEOUT, which bounds every ask. It returns how many it ended.
func EndCutOff(ctx context.Context, store CutStore, before time.Time) (int, error) {
	turns, err := store.Unfinished(ctx)
	if err != nil {
		return 0, fmt.Errorf("list the turns a stop cut off: %w", err)
	}
	n := 0
	for _, t := range turns {
		if t.Key.Team != Team || !t.Started.Before(before) {
			continue
		}
		if err := store.EndTurn(ctx, t.ID, session.TurnFailed, ""); err != nil {
			return n, fmt.Errorf("end the cut-off ask %s: %w", t.ID, err)
		}
		n++
	}
	return n, nil
}
