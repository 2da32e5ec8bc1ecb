package turn

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/askrepo/askrepo/internal/session"
)

func TestEndState(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want session.TurnState
	}{
		{nil, session.TurnDone},
		{fmt.Errorf("model: %w", context.Canceled), session.TurnStopped},
		{context.DeadlineExceeded, session.TurnFailed},
		{errors.New("model: 500"), session.TurnFailed},
	} {
		if got := EndState(tc.err); got != tc.want {
			t.Errorf("EndState(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
