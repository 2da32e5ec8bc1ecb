package slackbot

import (
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/turn"
)

// turnCounts counts what a turn's observer hears, whichever UI shows it:
// tool calls and their time, tokens, and the model's latency per step.
type turnCounts struct {
	b *Bot

	mu        sync.Mutex
	stepMark  time.Time // when the current model request began
	stepTimed bool      // its latency is observed
}

func newTurnCounts(b *Bot) *turnCounts {
	return &turnCounts{b: b, stepMark: time.Now()}
}

func (c *turnCounts) toolStarted() {
	c.mu.Lock()
	c.timeStepLocked()
	c.mu.Unlock()
}

func (c *turnCounts) toolDone(call turn.Call) {
	outcome := "ok"
	if call.Failed {
		outcome = "error"
	}
	label := toolLabel(call.Name, toolSet(c.b.cfg.Turns.ToolNames()))
	c.b.metrics.toolCalls.WithLabelValues(label, outcome).Inc()
	c.b.metrics.toolSeconds.WithLabelValues(label).Observe(call.Took.Seconds())
}

func (c *turnCounts) stepDone(s turn.Step) {
	m := c.b.metrics
	// A counter panics when asked to go down; whatever the model reported,
	// a negative count counts nothing.
	m.tokens.WithLabelValues("prompt").Add(float64(max(s.Usage.PromptTokens, 0)))
	m.tokens.WithLabelValues("cached").Add(float64(max(s.Usage.CachedPromptTokens, 0)))
	m.tokens.WithLabelValues("completion").Add(float64(max(s.Usage.CompletionTokens, 0)))

	c.mu.Lock()
	c.timeStepLocked()
	c.stepMark, c.stepTimed = time.Now(), false
	c.mu.Unlock()
}

// timeStepLocked observes the model's latency for the current step: the time
// from the request to its first tool call, or to StepDone for an answer.
func (c *turnCounts) timeStepLocked() {
	if !c.stepTimed {
		c.stepTimed = true
		c.b.metrics.stepSeconds.Observe(time.Since(c.stepMark).Seconds())
	}
}
