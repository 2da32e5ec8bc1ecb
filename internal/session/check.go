package session

import (
	"errors"
	"fmt"
)

// The checks every backend makes on a call's arguments before it touches
// its data, so that all of them refuse the same calls in the same words.

func checkStartTurn(t Turn) error {
	if t.ID == "" {
		return errors.New("start turn: empty turn ID")
	}
	return nil
}

func checkEndTurn(turnID string, state TurnState) error {
	if !state.Ended() {
		return fmt.Errorf("end turn %s: %q is not a final state (use done, failed or stopped, or SetTurnState)", turnID, state)
	}
	return nil
}

func checkContinueTurn(oldID string, next Turn) error {
	if next.ID == "" {
		return fmt.Errorf("continue turn %s: empty turn ID", oldID)
	}
	return nil
}

func checkReceive(key string) error {
	if key == "" {
		return errors.New("receive an event: empty key")
	}
	return nil
}

func checkEnqueue(key Key, id string) error {
	if id == "" {
		return fmt.Errorf("enqueue on %s: empty message ID", key)
	}
	return nil
}

// liveState is the SQL stores' verdict on a turn they are about to write to,
// from its lookup: missing (no such row) or its state. Writes go only to a
// turn that has not ended, as in Memory.liveTurn.
func liveState(missing bool, state TurnState) error {
	if missing {
		return ErrNotFound
	}
	if state.Ended() {
		return fmt.Errorf("state %s: %w", state, ErrTurnEnded)
	}
	return nil
}
