package slackbot

import (
	"errors"
	"fmt"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
)

// Turn outcomes, as logged and counted.
const (
	outcomeAnswered    = "answered"
	outcomeStopped     = "stopped"
	outcomeTimeout     = "timeout"
	outcomeInterrupted = "interrupted"
	outcomeModelDown   = "model_unavailable"
	outcomeModelRate   = "model_rate_limited"
	outcomeModelReject = "model_rejected"
	outcomeStepLimit   = "step_limit"
	outcomeInternal    = "internal_error"
	outcomeRepoDown    = "repository_unavailable"
	outcomeNotStarted  = "not_started"
	// A turn a restart cut off, found at start: only reported
	// (RecoverReport), or its answer was already in the thread.
	outcomeReported      = "reported_after_restart"
	outcomeAlreadyPosted = "already_posted"
	outcomeTakenOver     = "taken_over"
	// The message's turn was stored already, by a process that died
	// before it could mark the message handed on.
	outcomeDuplicate = "duplicate"
)

// classify maps a failed turn to an outcome, a store state and the one
// sentence people see. Nothing in the sentence comes from the error itself:
// raw errors may hold host paths, URLs or server messages.
func classify(err, cause error, timeout time.Duration, recovery string) (outcome string, state session.TurnState, sentence string) {
	var stop *stoppedBy
	switch {
	case errors.As(cause, &stop):
		return outcomeStopped, session.TurnStopped, ""
	case errors.Is(cause, errShutdown) && recovery == RecoverReport:
		// Stored as failed: the thread is told to ask again, so nothing
		// may pick this turn up later.
		return outcomeInterrupted, session.TurnFailed, "I was restarted before I could finish this answer; please ask again."
	case errors.Is(cause, errShutdown):
		return outcomeInterrupted, session.TurnInterrupted, noteWillResume
	case errors.Is(cause, errTurnTimeout):
		return outcomeTimeout, session.TurnFailed, fmt.Sprintf("This took longer than my limit of %s, so I stopped; a narrower question may work.", humanDuration(timeout))
	case errors.Is(err, llm.ErrRateLimited):
		return outcomeModelRate, session.TurnFailed, "The language model is rate limiting me right now; please try again in a few minutes."
	case errors.Is(err, llm.ErrUnavailable):
		return outcomeModelDown, session.TurnFailed, "The language model is not answering right now; please try again in a few minutes."
	case errors.Is(err, llm.ErrAuth), errors.Is(err, llm.ErrBadRequest), errors.Is(err, llm.ErrTruncated):
		return outcomeModelReject, session.TurnFailed, "The language model refused this request; the operators can look it up with the reference."
	case errors.Is(err, agent.ErrMaxSteps):
		return outcomeStepLimit, session.TurnFailed, "I reached my limit of steps before finding an answer; a narrower question may work."
	case errors.Is(err, agent.ErrRepeating):
		return outcomeStepLimit, session.TurnFailed, "I kept repeating the same lookups without getting closer to an answer; please rephrase the question."
	case errors.Is(err, repos.ErrUnavailable):
		return outcomeRepoDown, session.TurnFailed, "I cannot read the repository right now: its checkout is not available yet (the operators can see why on the health page). Please try again later."
	case errors.Is(err, agent.ErrEmptyAnswer):
		return outcomeModelReject, session.TurnFailed, "The language model gave no answer; please rephrase the question."
	}
	return outcomeInternal, session.TurnFailed, "Something went wrong on my side; the operators can look it up with the reference."
}

func humanDuration(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		n := int(d / time.Minute)
		if n == 1 {
			return "1 minute"
		}
		return fmt.Sprintf("%d minutes", n)
	}
	return d.Round(time.Second).String()
}
