package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// UsageBy is what usage totals are grouped by, besides the model (costs
// are priced per model, so every total is per model too).
type UsageBy string

const (
	UsageByNone    UsageBy = ""
	UsageByChannel UsageBy = "channel"
	UsageByUser    UsageBy = "user"
	UsageByRepo    UsageBy = "repo"
	UsageByModel   UsageBy = "model"
)

// UsageFilter selects the turns that usage totals cover: those started in
// [Since, Until) (a zero Until has no end), narrowed to one channel (Team
// and Channel), one user and one repository where those are set.
type UsageFilter struct {
	Since, Until  time.Time
	Team, Channel string
	User          string
	Repo          string
	By            UsageBy
}

// UsageRow is the total of the turns of one group and one model.
type UsageRow struct {
	// Group is the channel, user or repository the row counts (by By);
	// "" when not grouped, the model when grouped by it.
	Group string
	Model string
	// Turns counts every turn that spent tokens or tried to; Answers
	// those that ended done.
	Turns   int
	Answers int
	Usage   llm.Usage
}

// UsageTotals sums the usage of stored turns. A turn that a restart cut
// off and another turn continued (TurnContinued) is left out: its
// successor carries its steps and tokens. A running turn counts with the
// steps it has stored so far, so a budget sees work in flight on every
// replica.
type UsageTotals interface {
	UsageTotals(ctx context.Context, f UsageFilter) ([]UsageRow, error)
}

var (
	_ UsageTotals = (*Memory)(nil)
	_ UsageTotals = (*SQLite)(nil)
	_ UsageTotals = (*Postgres)(nil)
)

// usageGroup is the column a UsageBy groups on.
func usageGroup(by UsageBy) (string, error) {
	switch by {
	case UsageByNone:
		return "''", nil
	case UsageByChannel:
		return "s.channel", nil
	case UsageByUser:
		return "t.user_id", nil
	case UsageByRepo:
		return "t.repo", nil
	case UsageByModel:
		return "t.model", nil
	}
	return "", fmt.Errorf("usage totals: cannot group by %q: use channel, user, repo or model", by)
}

// usageQuery is UsageTotals' statement for both SQL stores: one SUM over
// the turns the filter's indexes find, never a row per turn back to Go.
// ph returns the placeholder of the n-th argument (from 1).
func usageQuery(f UsageFilter, ph func(n int) string) (string, []any, error) {
	group, err := usageGroup(f.By)
	if err != nil {
		return "", nil, err
	}
	// The answers' placeholder comes first: it is first in the statement.
	args := []any{string(TurnDone)}
	answers := fmt.Sprintf("SUM(CASE WHEN t.state = %s THEN 1 ELSE 0 END)", ph(1))
	var where []string
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, ph(len(args))))
	}
	add("t.started >= %s", f.Since.UnixNano())
	if !f.Until.IsZero() {
		add("t.started < %s", f.Until.UnixNano())
	}
	add("t.state <> %s", string(TurnContinued))
	if f.Channel != "" {
		add("s.team = %s", f.Team)
		add("s.channel = %s", f.Channel)
	}
	if f.User != "" {
		add("t.user_id = %s", f.User)
	}
	if f.Repo != "" {
		add("t.repo = %s", f.Repo)
	}
	q := `SELECT ` + group + `, t.model, COUNT(*), ` + answers + `,
		CAST(COALESCE(SUM(t.prompt_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(t.cached_prompt_tokens), 0) AS BIGINT),
		CAST(COALESCE(SUM(t.completion_tokens), 0) AS BIGINT)
		FROM turns t JOIN sessions s ON s.id = t.session_id
		WHERE ` + strings.Join(where, " AND ") + `
		GROUP BY 1, 2 ORDER BY 1, 2`
	return q, args, nil
}

// scanUsageRow reads a row of usageQuery.
func scanUsageRow(sc scanner) (UsageRow, error) {
	var r UsageRow
	err := sc.Scan(&r.Group, &r.Model, &r.Turns, &r.Answers,
		&r.Usage.PromptTokens, &r.Usage.CachedPromptTokens, &r.Usage.CompletionTokens)
	return r, err
}
