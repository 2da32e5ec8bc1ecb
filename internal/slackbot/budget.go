package slackbot

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/usage"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// outcomeOverBudget is a question refused because a budget of its
// channel, user or repository is used up; the model was not asked.
const outcomeOverBudget = "over_budget"

// overBudget handles a question refused before the model was asked,
// and reports whether err was that refusal. The turn asks first, before
// it reacts or leases a checkout (like the other one-sentence refusals,
// nothing is read), and the runner asks again, which catches a budget
// another replica used up in between. The thread gets the one sentence
// that names the budget and when it resets, no reference (nothing went
// wrong) and no warning reaction. No turn was stored: none to end. A
// store that cannot say is left to the runner's check, which fails the
// turn as any store failure does.
func (t *turnRun) overBudget(err error) bool {
	over, ok := errors.AsType[*usage.OverBudget](err)
	if !ok {
		return false
	}
	t.res.outcome = outcomeOverBudget
	if t.prog != nil || t.stream != nil { // refused by the runner, after the turn showed work
		t.endWork(false)
		t.b.unreact(t.post, t.in, reactWorking)
	}
	t.b.postOut(t.post, t.in, render.Outgoing{Text: over.Error()}, t.log)
	t.summary()
	return true
}

// governance are the summary line's fields an operator accounts for a
// turn with: total latency from the message's arrival (queue included),
// the model, the tools called with their counts, and the model requests
// retried after a transient failure.
func (t *turnRun) governance() []any {
	return []any{
		"latency", time.Since(t.j.arrived).Round(time.Millisecond),
		"model", t.b.cfg.Turns.ModelName(),
		"tools", toolCounts(t.out.Tools),
		"retries", t.out.Loop.Retries,
	}
}

// toolCounts writes the tools called as "read_file×3,list_files", in the
// order each was first called. Names are the model's: one that is not
// an offered tool is written as "other", so a log line stays bounded.
func toolCounts(called []string) string {
	var names []string
	counts := map[string]int{}
	for _, n := range called {
		if !isToolName(n) {
			n = "other"
		}
		if counts[n] == 0 {
			names = append(names, n)
		}
		counts[n]++
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n
		if c := counts[n]; c > 1 {
			parts[i] += fmt.Sprintf("×%d", c)
		}
	}
	return strings.Join(parts, ",")
}

// isToolName reports whether s looks like a tool's name (snake_case,
// short): the model may send any text as a name.
func isToolName(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_'
	})
}

// countUsage adds the turn's spend to the usage metrics.
func (t *turnRun) countUsage() {
	if t.co == nil {
		return // no checkout, so no model request either
	}
	t.b.metrics.usage.Count(t.co.repo, t.b.cfg.Turns.ModelName(), t.out.Usage, t.res.outcome == outcomeAnswered)
}
