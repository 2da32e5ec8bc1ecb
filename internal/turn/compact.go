package turn

import (
	"context"
	"slices"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/budget"
	"github.com/askrepo/askrepo/internal/llm"
)

// compactHistory compacts a thread's history once it and the new question
// would pass the budget, and stores the result, so every later request of
// the thread starts with the same compacted prefix (the provider's prompt
// cache misses once, at the compaction). Compaction happens here, between
// turns, in one go; a single turn that outgrows the budget on its own is
// the agent's Compact hook's to handle. The question and the answers are
// kept verbatim (see budget.Compact). On a store error the history is used
// as it is and compaction is tried again next turn.
func (r *Runner) compactHistory(ctx context.Context, req Request, a *agent.Agent, history []llm.Message, user llm.Message) ([]llm.Message, bool) {
	if r.cfg.Budget <= 0 || len(history) == 0 {
		return history, false
	}
	system, specs := a.Prefix()
	est := func(msgs []llm.Message) int {
		return r.cfg.Calibrator.Estimate(r.cfg.Model, withSystem(system, msgs), specs)
	}
	all := append(slices.Clip(history), user)
	before := est(all)
	out, changed := budget.Compact(all, r.cfg.Budget, est)
	if !changed {
		return history, false
	}
	compacted := out[:len(out)-1] // the question, untouched, goes in with StartTurn
	if err := r.cfg.Store.ReplaceHistory(ctx, req.Key, compacted); err != nil {
		req.Log.Error("store a compacted history; sending it whole", "err", err)
		return history, false
	}
	req.Log.Info("compacted a thread's history", "budget", r.cfg.Budget,
		"estimated_before", before, "estimated_after", est(out), "messages_before", len(history), "messages_after", len(compacted))
	return compacted, true
}

// estimateRaw is budget.EstimateTokens of a request sending history after
// the system prompt, with the tools' definitions.
func (r *Runner) estimateRaw(system llm.Message, specs []llm.ToolSpec, history []llm.Message) int {
	return budget.EstimateTokens(withSystem(system, history), specs)
}

func withSystem(system llm.Message, history []llm.Message) []llm.Message {
	if system.Role == "" {
		return history
	}
	return slices.Concat([]llm.Message{system}, history)
}
