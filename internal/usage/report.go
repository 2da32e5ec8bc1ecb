package usage

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/askrepo/askrepo/internal/session"
)

// Report is the usage of the turns started since Since, one Line per
// group (channel, user, repository or model) and their Total.
type Report struct {
	Since time.Time       `json:"since"`
	By    session.UsageBy `json:"by,omitempty"`
	Lines []Line          `json:"lines"`
	Total Line            `json:"total"`
}

// Line is the usage of one group. Prompt tokens are split into those the
// provider served from its cache and the rest, as they are priced.
type Line struct {
	Group            string  `json:"group,omitempty"`
	Answers          int     `json:"answers"`
	Turns            int     `json:"turns"`
	UncachedTokens   int     `json:"uncached_prompt_tokens"`
	CachedTokens     int     `json:"cached_prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	EstimatedCost    float64 `json:"estimated_cost"`
	// Unpriced are the models of this line missing from the price
	// table: their tokens are counted, their cost is not.
	Unpriced []string `json:"unpriced_models,omitempty"`
}

// NewReport reads the totals since since, grouped by by, from store and
// prices them.
func NewReport(ctx context.Context, store session.UsageTotals, since time.Time, by session.UsageBy, prices Prices) (Report, error) {
	rows, err := store.UsageTotals(ctx, session.UsageFilter{Since: since, By: by})
	if err != nil {
		return Report{}, fmt.Errorf("usage report: %w", err)
	}
	return Summarize(rows, since, by, prices), nil
}

// Summarize folds the store's rows, one per group and model, into a line
// per group, priced, in the rows' order.
func Summarize(rows []session.UsageRow, since time.Time, by session.UsageBy, prices Prices) Report {
	rep := Report{Since: since.UTC(), By: by, Lines: []Line{}}
	for _, r := range rows {
		if n := len(rep.Lines); n == 0 || rep.Lines[n-1].Group != r.Group {
			rep.Lines = append(rep.Lines, Line{Group: r.Group})
		}
		rep.Lines[len(rep.Lines)-1].add(r, prices)
		rep.Total.add(r, prices)
	}
	return rep
}

func (l *Line) add(r session.UsageRow, prices Prices) {
	l.Answers += r.Answers
	l.Turns += r.Turns
	l.CachedTokens += r.Usage.CachedPromptTokens
	l.UncachedTokens += max(r.Usage.PromptTokens-r.Usage.CachedPromptTokens, 0)
	l.CompletionTokens += r.Usage.CompletionTokens
	cost, ok := prices.Cost(r.Model, r.Usage)
	l.EstimatedCost += cost
	if !ok && !slices.Contains(l.Unpriced, r.Model) {
		l.Unpriced = append(l.Unpriced, r.Model)
	}
}
