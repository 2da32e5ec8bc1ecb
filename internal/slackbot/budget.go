package slackbot

import (
	"context"
	"slices"

	"github.com/askrepo/askrepo/internal/budget"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
)

// estimateRaw is budget.EstimateTokens of a request sending history: the
// system prompt and the tools counted in when the Answerer reports them.
func (b *Bot) estimateRaw(history []llm.Message) int {
	return budget.EstimateTokens(b.withSystem(history), b.tools)
}

func (b *Bot) withSystem(history []llm.Message) []llm.Message {
	if b.system.Role == "" {
		return history
	}
	return slices.Concat([]llm.Message{b.system}, history)
}

// compactHistory compacts a thread's history once it and the new question
// would pass ContextBudget, and stores the result, so every later request
// of the thread starts with the same compacted prefix (the provider's prompt
// cache misses once, at the compaction). Compaction happens here, between
// turns, in one go; a single turn that outgrows the budget on its own is
// the agent's Compact hook's to handle. The question and the answers are
// kept verbatim (see budget.Compact). On a store error the history is used
// as it is and compaction is tried again next turn.
func (b *Bot) compactHistory(ctx context.Context, key session.Key, history []llm.Message, user llm.Message) []llm.Message {
	if b.cfg.ContextBudget <= 0 || len(history) == 0 {
		return history
	}
	est := func(msgs []llm.Message) int {
		return b.cfg.Calibrator.Estimate(b.cfg.Model, b.withSystem(msgs), b.tools)
	}
	all := append(slices.Clip(history), user)
	before := est(all)
	out, changed := budget.Compact(all, b.cfg.ContextBudget, est)
	if !changed {
		return history
	}
	compacted := out[:len(out)-1] // the question, untouched, goes in with StartTurn
	if err := b.cfg.Store.ReplaceHistory(ctx, key, compacted); err != nil {
		b.log.Error("store a compacted history; sending it whole", "thread", key.String(), "err", err)
		return history
	}
	b.metrics.compactions.Inc()
	b.log.Info("compacted a thread's history", "thread", key.String(), "budget", b.cfg.ContextBudget,
		"estimated_before", before, "estimated_after", est(out), "messages_before", len(history), "messages_after", len(compacted))
	return compacted
}
