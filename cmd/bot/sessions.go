package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/session"
)

// runSessions lists stored thread sessions with their token totals, newest
// first, so an operator can see what the bot remembers and what it costs.
// Listing only reads: a SQLite store that does not exist yet is reported,
// not created (with the data directory) as serving would.
func runSessions(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	if db, missing := sqliteStoreMissing(cfg); missing {
		fmt.Fprintf(stdout, "No sessions: no store at %s (it is created when bot serve first runs with BOT_DATA_DIR=%s).\n", db, cfg.DataDir)
		return nil
	}
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
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Key, s.Repo, gitexec.ShortCommit(s.Commit), s.Turns,
			s.Usage.PromptTokens, s.Usage.CachedPromptTokens, s.Usage.CompletionTokens,
			s.Updated.Local().Format(time.DateTime))
	}
	return w.Flush()
}

// sqliteStoreMissing reports whether the store is SQLite's and its file
// does not exist yet, with the file's path: a command that only reads
// says so rather than create it (with the data directory) as serving
// would.
func sqliteStoreMissing(cfg config.Config) (db string, missing bool) {
	if spec := cfg.Store.Reveal(); spec != "" && spec != "sqlite" {
		return "", false
	}
	db = filepath.Join(cfg.DataDir, session.SQLiteFile)
	if abs, err := filepath.Abs(db); err == nil {
		db = abs
	}
	_, err := os.Stat(db)
	return db, errors.Is(err, fs.ErrNotExist)
}
