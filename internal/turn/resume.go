package turn

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
)

// Resume runs a turn a restart cut off to its answer, once the caller has
// claimed it (session.Store.ContinueTurn, which started req.TurnID in the
// store): from its last persisted step, or from its question when rerun
// is set (the steps already stored are dropped first). req.Session is the
// session loaded after the claim; req.Continues names the cut-off turn.
//
// The lease is taken anew for the rest of the turn: it may be at a newer
// commit than the steps already stored, and the session records it.
func (r *Runner) Resume(ctx context.Context, req Request, rerun bool) (Result, error) {
	req.Log = orDiscard(req.Log)
	res := Result{Started: true, ThreadUsage: req.Session.Session.Usage}
	if !req.Session.Found {
		return res, fmt.Errorf("resume turn %s: the thread's session is gone (purged?)", req.Continues)
	}
	sess := req.Session.Session
	hist := sess.History
	q := agent.QuestionIndex(hist)
	if q < 0 {
		return res, fmt.Errorf("resume turn %s: the history holds no question", req.Continues)
	}
	if EndsWithAnswer(hist) {
		return r.check(ctx, req, res, strings.TrimSpace(hist[len(hist)-1].Content)), nil
	}
	a, err := r.newAgent(ctx, req)
	if err != nil {
		return res, err
	}
	if c := req.Lease.Commit; c != "" && c != sess.Commit {
		r.setCommit(ctx, req, c)
	}
	if rerun && q < len(hist)-1 {
		hist = slices.Clone(hist[:q+1])
		if err := r.cfg.Store.ReplaceHistory(ctx, req.Key, hist); err != nil {
			return res, fmt.Errorf("drop the steps of a turn to run it again: %w", err)
		}
	}
	return r.run(ctx, req, a, res, slices.Clone(hist), func(ctx context.Context, obs agent.Observer) (agent.Turn, error) {
		return a.Resume(ctx, hist, obs)
	})
}

// EndsWithAnswer reports whether the last turn of h has its final answer:
// a turn cut off after that was stored needs no request to finish.
func EndsWithAnswer(h []llm.Message) bool {
	if len(h) == 0 {
		return false
	}
	last := h[len(h)-1]
	return last.Role == llm.RoleAssistant && len(last.ToolCalls) == 0 &&
		strings.TrimSpace(last.Content) != "" && agent.QuestionIndex(h) < len(h)-1
}
