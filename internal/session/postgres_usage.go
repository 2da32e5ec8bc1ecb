package session

import (
	"context"
	"fmt"
	"strconv"
)

func (s *Postgres) UsageTotals(ctx context.Context, f UsageFilter) ([]UsageRow, error) {
	q, args, err := usageQuery(f, func(n int) string { return "$" + strconv.Itoa(n) })
	if err != nil {
		return nil, err
	}
	out, err := pgQueryAll(ctx, s.pool, scanUsageRow, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", err)
	}
	return out, nil
}
