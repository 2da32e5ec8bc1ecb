package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/session"
)

// Gate checks a question against the budgets before it reaches the model.
// It reads the store at each question, so a count another replica added a
// moment ago is seen; it keeps no state of its own and is safe for
// concurrent use.
//
// Only the start of a question is checked: a turn that crosses a budget
// mid-way finishes its answer, and the next question is refused. Two
// questions that start at the same moment on different replicas may both
// pass; a budget is a bound on spend, not an exact fence.
type Gate struct {
	limits []config.Limit
	prices Prices
	store  session.UsageTotals
	now    func() time.Time
}

// NewGate builds a gate over store; now nil means time.Now. A gate with no
// limits admits every question without reading the store.
func NewGate(b config.Budgets, store session.UsageTotals, now func() time.Time) *Gate {
	if now == nil {
		now = time.Now
	}
	return &Gate{limits: b.Limits, prices: b.Prices, store: store, now: now}
}

// Admit returns nil if a question in the thread key, asked by user about
// repo, may reach the model; *OverBudget (its Error is the sentence the
// person reads) if a budget of its channel, user or repository is used up;
// another error if the store cannot say.
func (g *Gate) Admit(ctx context.Context, key session.Key, user, repo string) error {
	if g == nil || len(g.limits) == 0 {
		return nil
	}
	now := g.now().UTC()
	for _, l := range g.limits {
		start, end := Period(l.Period, now)
		f := session.UsageFilter{Since: start, Until: end}
		switch l.Per {
		case config.PerChannel:
			f.Team, f.Channel = key.Team, key.Channel
		case config.PerUser:
			f.User = user
		case config.PerRepo:
			f.Repo = repo
		}
		rows, err := g.store.UsageTotals(ctx, f)
		if err != nil {
			return fmt.Errorf("check the %s budget per %s: %w", l.Period, l.Per, err)
		}
		var tokens int64
		var cost float64
		for _, r := range rows {
			tokens += Tokens(r.Usage)
			c, _ := g.prices.Cost(r.Model, r.Usage)
			cost += c
		}
		if over := (l.Tokens > 0 && tokens >= l.Tokens); over || (l.Cost > 0 && cost >= l.Cost) {
			return &OverBudget{Limit: l, Repo: repo, ByTokens: over, Resets: end}
		}
	}
	return nil
}

// Period is the UTC day or month (period) that holds now: [start, end),
// end being when its budgets reset.
func Period(period string, now time.Time) (start, end time.Time) {
	y, m, d := now.UTC().Date()
	if period == config.PeriodMonth {
		start = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	start = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 0, 1)
}

// OverBudget is a question refused because a budget is used up.
type OverBudget struct {
	Limit config.Limit
	// Repo names the repository of a per-repository budget.
	Repo string
	// ByTokens: the token limit is used up (else the cost limit).
	ByTokens bool
	Resets   time.Time
}

// Error is the one sentence the person who asked reads: which budget,
// and when it resets. Nothing in it comes from the question.
func (e *OverBudget) Error() string {
	amount := fmt.Sprintf("an estimated cost of %.2f", e.Limit.Cost)
	if e.ByTokens {
		amount = fmtCount(e.Limit.Tokens) + " tokens"
	}
	when := "today's"
	if e.Limit.Period == config.PeriodMonth {
		when = "this month's"
	}
	var who string
	switch e.Limit.Per {
	case config.PerChannel:
		who = "This channel has used " + when + " budget of " + amount + " for each channel"
	case config.PerUser:
		who = "You have used " + when + " budget of " + amount + " for each person"
	default:
		who = "Questions about " + e.Repo + " have used " + when + " budget of " + amount + " for each repository"
	}
	return who + ", so I am not asking the model; it resets at " + e.Resets.UTC().Format("15:04 UTC on Monday 2 January") + "."
}

// fmtCount writes n with thousands separators: 2,000,000.
func fmtCount(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
