package session

import (
	"context"
	"fmt"
)

func (s *SQLite) UsageTotals(ctx context.Context, f UsageFilter) ([]UsageRow, error) {
	q, args, err := usageQuery(f, func(int) string { return "?" })
	if err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, s.r, scanUsageRow, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", err)
	}
	return out, nil
}
