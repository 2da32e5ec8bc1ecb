package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/session"
)

// runSessions lists stored thread sessions with their token totals, newest
// first, so an operator can see what the bot remembers and what it costs.
func runSessions(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	store, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	list, err := store.Sessions(ctx, 200)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	if len(list) == 0 {
		where := cfg.DataDir
		if spec := cfg.Store.Reveal(); spec != "" && spec != "sqlite" {
			where = session.RedactDSN(spec) // "memory", or a URL without its password
		}
		fmt.Fprintf(stdout, "No sessions stored in %s yet.\n", where)
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "THREAD\tREPO\tCOMMIT\tTURNS\tPROMPT\tCACHED\tOUT\tUPDATED")
	for _, s := range list {
		commit := s.Commit
		if len(commit) > 7 {
			commit = commit[:7]
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Key, s.Repo, commit, s.Turns,
			s.Usage.PromptTokens, s.Usage.CachedPromptTokens, s.Usage.CompletionTokens,
			s.Updated.Local().Format(time.DateTime))
	}
	return w.Flush()
}
