package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/usage"
)

// reportFlags are bot usage's own flags.
type reportFlags struct {
	since, by string
	json      bool
}

// runUsage prints what the stored turns spent since --since, one line per
// --by group, with the cost estimated from the price table. It reads the
// store every replica writes, so its totals are the service's, not one
// process's.
func runUsage(ctx context.Context, cfg config.Config, f reportFlags, stdout io.Writer) error {
	age, err := parseSince(f.since)
	if err != nil {
		return usageError{err.Error()}
	}
	by := session.UsageBy(strings.ToLower(f.by))
	switch by {
	case session.UsageByNone, session.UsageByChannel, session.UsageByUser, session.UsageByRepo, session.UsageByModel:
	default:
		return usageError{fmt.Sprintf("usage: --by %q: want channel, user, repo or model", f.by)}
	}
	since := clock().Add(-age)
	var rep usage.Report
	if db, missing := sqliteStoreMissing(cfg); missing {
		if !f.json {
			fmt.Fprintf(stdout, "No usage: no store at %s (it is created when bot serve first runs with BOT_DATA_DIR=%s).\n", db, cfg.DataDir)
			return nil
		}
		rep = usage.Summarize(nil, since, by, nil)
	} else {
		store, err := openStore(ctx, cfg)
		if err != nil {
			return err
		}
		defer store.Close()
		if rep, err = usage.NewReport(ctx, store, since, by, cfg.Budgets.Prices); err != nil {
			return err
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printReport(stdout, rep, f.since)
}

// printReport writes the report as a table, the total last.
func printReport(stdout io.Writer, rep usage.Report, since string) error {
	what := "all turns"
	if rep.By != session.UsageByNone {
		what = "by " + string(rep.By)
	}
	fmt.Fprintf(stdout, "Turns started since %s (%s), %s:\n\n", rep.Since.Format("2006-01-02 15:04 UTC"), since, what)
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "%s\tANSWERS\tTURNS\tUNCACHED IN\tCACHED IN\tOUT\tEST. COST\t\n", strings.ToUpper(string(rep.By)))
	row := func(name string, l usage.Line) {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t\n", name, l.Answers, l.Turns, l.UncachedTokens, l.CachedTokens, l.CompletionTokens, l.EstimatedCost)
	}
	if rep.By != session.UsageByNone {
		for _, l := range rep.Lines {
			row(cmp.Or(l.Group, "(none)"), l)
		}
	}
	row("TOTAL", rep.Total)
	if err := w.Flush(); err != nil {
		return err
	}
	if len(rep.Total.Unpriced) > 0 {
		fmt.Fprintf(stdout, "\nNo price in BOT_CONFIG's budgets.prices for %s: their tokens are counted, their cost is not.\n", strings.Join(rep.Total.Unpriced, ", "))
	}
	return nil
}
