package session

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

func (s *Postgres) UsageTotals(ctx context.Context, f UsageFilter) ([]UsageRow, error) {
	q, args, err := usageQuery(f, func(n int) string { return "$" + strconv.Itoa(n) })
	if err != nil {
		return nil, err
	}
	// An unnamed statement is planned with its values each time: a cached
	// one soon gets a generic plan, which cannot tell a day's turns from
	// all of them, and summed a month of turns about 3× slower (see
	// BENCHMARKS.md, "Session store").
	out, err := pgQueryAll(ctx, s.pool, scanUsageRow, q, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", err)
	}
	return out, nil
}
