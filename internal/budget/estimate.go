package budget

import (
	"math"
	"strings"
	"sync"

	"github.com/askrepo/askrepo/internal/llm"
)

// DefaultBytesPerToken is the bytes-per-token ratio EstimateTokens assumes.
// Measured with o200k on a Go repository: Go 3.68, Markdown 3.71, JSON 3.23
// bytes per token; 3.5 errs on the side of over-counting, which is the safe
// side for a budget. Other tokenizers (DeepSeek, Qwen, Llama) differ, which
// is what Calibrator corrects.
const DefaultBytesPerToken = 3.5

// messageOverheadBytes stands for the framing each message costs (role,
// separators, the call id of a tool result): about four tokens.
const messageOverheadBytes = 14

// EstimateTokens estimates the prompt tokens of a request with msgs and tools
// from their byte size. It is deliberately cheap (no tokenizer, no
// allocation) so it can run before every request; calibrate it per model
// with a Calibrator.
func EstimateTokens(msgs []llm.Message, tools []llm.ToolSpec) int {
	return int(math.Ceil(float64(estimateBytes(msgs, tools)) / DefaultBytesPerToken))
}

func estimateBytes(msgs []llm.Message, tools []llm.ToolSpec) int {
	n := 0
	for _, m := range msgs {
		n += messageOverheadBytes + len(m.Content) + len(m.Reasoning) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += messageOverheadBytes + len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range tools {
		n += messageOverheadBytes + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// Calibrator learns, per model, how far EstimateTokens is from the prompt
// tokens the server reports, and scales estimates by that factor. It keeps
// an exponentially weighted average so it follows a change of model behind
// the same name without forgetting everything at once. Safe for concurrent
// use; the zero value is ready.
type Calibrator struct {
	mu      sync.Mutex
	factors map[string]float64 // reported / estimated
}

// Calibration bounds: observations on tiny prompts say little, and a factor
// outside the clamp means a reporting bug (0 tokens, a cumulative count),
// not a tokenizer.
const (
	calibrationWeight       = 0.2
	calibrationMinEstimated = 64
	calibrationMinFactor    = 0.25
	calibrationMaxFactor    = 4
)

// Observe records that a request estimated (by EstimateTokens) at estimated
// tokens was reported by the server as reported prompt tokens. Pairs too
// small or too far off to be trusted are ignored; a zero report (a server
// that reports nothing) is ignored too.
func (c *Calibrator) Observe(model string, estimated, reported int) {
	if estimated < calibrationMinEstimated || reported <= 0 {
		return
	}
	f := float64(reported) / float64(estimated)
	if f < calibrationMinFactor || f > calibrationMaxFactor {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.factors == nil {
		c.factors = make(map[string]float64)
	}
	old, ok := c.factors[model]
	if !ok {
		c.factors[model] = f
		return
	}
	c.factors[model] = old + calibrationWeight*(f-old)
}

// Factor is the model's current correction (1 until observed).
func (c *Calibrator) Factor(model string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.factors[model]; ok {
		return f
	}
	return 1
}

// Estimate is EstimateTokens corrected for model.
func (c *Calibrator) Estimate(model string, msgs []llm.Message, tools []llm.ToolSpec) int {
	return int(math.Ceil(float64(EstimateTokens(msgs, tools)) * c.Factor(model)))
}

// Estimator returns the estimate function Compact takes: the history's
// calibrated tokens plus those of the tool definitions sent with it.
func (c *Calibrator) Estimator(model string, tools []llm.ToolSpec) func([]llm.Message) int {
	return func(msgs []llm.Message) int { return c.Estimate(model, msgs, tools) }
}

// Compactor returns the hook agent.Config.Compact takes: it compacts a
// request's messages (system prompt first) with Compact when the calibrated
// estimate, tools included, is over budget. A budget of 0 or less turns it
// off.
func (c *Calibrator) Compactor(model string, budget int) func([]llm.Message, []llm.ToolSpec) ([]llm.Message, bool) {
	return func(msgs []llm.Message, tools []llm.ToolSpec) ([]llm.Message, bool) {
		if budget <= 0 {
			return msgs, false
		}
		return Compact(msgs, budget, c.Estimator(model, tools))
	}
}

// contextWindows are the context sizes, in tokens, of models people point
// askrepo at, by name prefix (longest prefix wins).
var contextWindows = map[string]int{
	"gpt-4.1":       1_047_576,
	"gpt-4o":        128_000,
	"gpt-5":         400_000,
	"o3":            200_000,
	"o4-mini":       200_000,
	"deepseek-chat": 128_000,
	"deepseek-r":    128_000,
	"claude":        200_000,
	"qwen":          32_768,
	"llama3":        128_000,
	"mistral":       32_000,
}

// Budget bounds for DefaultBudget: a share of the window leaves room for the
// answer and the turn's own growth; the cap keeps a request's cost sane on
// models with huge windows, where a long prompt is slow and expensive even if
// it fits; unknown models get what fits a 100k window.
const (
	budgetShare   = 0.6
	budgetCap     = 120_000
	budgetUnknown = 60_000
)

// DefaultBudget is the context budget, in prompt tokens, for a model: 60% of
// its known context window, at most 120k; 60k for a model it does not know.
func DefaultBudget(model string) int {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:] // "deepseek/deepseek-chat", "openai/gpt-4o"
	}
	best, window := "", 0
	for prefix, w := range contextWindows {
		if strings.HasPrefix(name, prefix) && len(prefix) > len(best) {
			best, window = prefix, w
		}
	}
	if window == 0 {
		return budgetUnknown
	}
	return min(int(float64(window)*budgetShare), budgetCap)
}
