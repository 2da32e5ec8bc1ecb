package turn

import (
	"context"
	"errors"

	"github.com/askrepo/askrepo/internal/session"
)

// EndState is the state a turn the store has (Result.Started) ends in,
// given Run's or Resume's error: done, stopped when its context was
// cancelled (a person stopped it, or its caller went away), failed
// otherwise. A front end without outcomes of its own (the terminal, MCP)
// ends its turns with it.
func EndState(err error) session.TurnState {
	switch {
	case err == nil:
		return session.TurnDone
	case errors.Is(err, context.Canceled):
		return session.TurnStopped
	}
	return session.TurnFailed
}
