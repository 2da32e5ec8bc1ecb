package session

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
)

// benchUsageTurns is how many turns BenchmarkUsageTotals stores: 100,000
// over 60 days, in 1,000 threads of 20 channels, by 200 people, about 5
// repositories.
const benchUsageTurns = 100_000

var benchUsageStart = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

// benchUsageStep spreads the turns evenly over 60 days.
var benchUsageStep = 60 * 24 * time.Hour / benchUsageTurns

// seedUsage fills st with benchUsageTurns turns, straight into its tables
// (through the store's own calls it would take minutes).
func seedUsage(b *testing.B, st Store) {
	ctx := context.Background()
	var err error
	switch s := st.(type) {
	case *Memory:
		for i := range 1000 {
			k := Key{Team: "T", Channel: fmt.Sprint("C", i%20), Thread: fmt.Sprint(i)}
			s.sessions[k] = &Session{Key: k}
		}
		for i := range benchUsageTurns {
			s.turns[fmt.Sprint("b", i)] = &Turn{ID: fmt.Sprint("b", i), State: TurnDone,
				Key:  Key{Team: "T", Channel: fmt.Sprint("C", (i%1000)%20), Thread: fmt.Sprint(i % 1000)},
				User: fmt.Sprint("U", i%200), Repo: fmt.Sprint("r", i%5), Model: "m",
				Started: benchUsageStart.Add(time.Duration(i) * benchUsageStep),
				Usage:   llm.Usage{PromptTokens: 1000, CachedPromptTokens: 400, CompletionTokens: 50}}
		}
	case *SQLite:
		_, err = s.w.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < 999)
			INSERT INTO sessions (id, team, channel, thread, created, updated) SELECT i+1, 'T', 'C'||(i%20), i, 1, 1 FROM n`)
		if err == nil {
			_, err = s.w.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < ?)
				INSERT INTO turns (id, session_id, state, user_id, started, repo, model, prompt_tokens, cached_prompt_tokens, completion_tokens)
				SELECT 'b'||i, 1 + i%1000, 'done', 'U'||(i%200), ? + i*?, 'r'||(i%5), 'm', 1000, 400, 50 FROM n`,
				benchUsageTurns-1, benchUsageStart.UnixNano(), int64(benchUsageStep))
		}
		if err == nil {
			_, err = s.w.ExecContext(ctx, `ANALYZE`)
		}
	case *Postgres:
		_, err = s.pool.Exec(ctx, `INSERT INTO sessions (id, team, channel, thread, created, updated) OVERRIDING SYSTEM VALUE
			SELECT i+1, 'T', 'C'||(i%20), i::text, 1, 1 FROM generate_series(0, 999) i`)
		if err == nil {
			_, err = s.pool.Exec(ctx, `INSERT INTO turns (id, session_id, state, user_id, started, repo, model, prompt_tokens, cached_prompt_tokens, completion_tokens)
				SELECT 'b'||i, 1 + i%1000, 'done', 'U'||(i%200), $2::bigint + i*$3::bigint, 'r'||(i%5), 'm', 1000, 400, 50 FROM generate_series(0, $1::int) i`,
				benchUsageTurns-1, benchUsageStart.UnixNano(), int64(benchUsageStep))
		}
		if err == nil {
			_, err = s.pool.Exec(ctx, `ANALYZE`)
		}
	}
	if err != nil {
		b.Fatalf("seed turns: %v", err)
	}
}

// BenchmarkUsageTotals times the sums a budget check reads before each
// question (one per limit), and the usage report's.
func BenchmarkUsageTotals(b *testing.B) {
	now := benchUsageStart.Add(59*24*time.Hour + 12*time.Hour)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	filters := []struct {
		name string
		f    UsageFilter
	}{
		{"user-day", UsageFilter{Since: day, Until: day.AddDate(0, 0, 1), User: "U7"}},
		{"channel-month", UsageFilter{Since: month, Until: month.AddDate(0, 1, 0), Team: "T", Channel: "C3"}},
		{"repo-month", UsageFilter{Since: month, Until: month.AddDate(0, 1, 0), Repo: "r2"}},
		{"report-30d-by-user", UsageFilter{Since: now.Add(-30 * 24 * time.Hour), By: UsageByUser}},
	}
	for _, name := range benchNames() {
		b.Run(name, func(b *testing.B) {
			st := benchStores(b)[name]() // closed at cleanup
			seedUsage(b, st)
			for _, f := range filters {
				b.Run(f.name, func(b *testing.B) {
					for b.Loop() {
						if _, err := st.(UsageTotals).UsageTotals(b.Context(), f.f); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
