package usage

import (
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/llm"
)

// Prices are each model's prices per million tokens, from BOT_CONFIG.
type Prices map[string]config.Price

// Cost is the estimated cost of u on model, and whether the table has the
// model's price at all (without it the cost is 0). Prompt tokens served
// from the provider's cache are priced as cached, the rest as input.
func (p Prices) Cost(model string, u llm.Usage) (float64, bool) {
	price, ok := p[model]
	if !ok {
		return 0, false
	}
	uncached := max(u.PromptTokens-u.CachedPromptTokens, 0)
	return (float64(uncached)*price.Input + float64(u.CachedPromptTokens)*price.Cached +
		float64(u.CompletionTokens)*price.Output) / 1e6, true
}

// Tokens is what a token budget counts of u: every prompt token, cached or
// not, and every completion token.
func Tokens(u llm.Usage) int64 {
	return int64(u.PromptTokens) + int64(u.CompletionTokens)
}
