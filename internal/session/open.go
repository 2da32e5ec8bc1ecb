package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Options are what every backend takes, for Open.
type Options struct {
	// Now is the store's clock; nil means time.Now.
	Now func() time.Time
	// Limits bounds the stored history; see Limits.
	Limits Limits
}

// SQLiteFile is the name of the SQLite store inside the data directory.
const SQLiteFile = "askrepo.db"

// Open opens the store that spec (the BOT_STORE setting) names:
//
//	"" or "sqlite"                 SQLite in dataDir/askrepo.db (the default: one replica)
//	"memory"                       in process memory, forgotten on exit
//	"postgres://…", "postgresql://…" PostgreSQL, shared by several replicas
//
// A PostgreSQL DSN carries a password: it never appears in an error.
func Open(ctx context.Context, spec, dataDir string, opts Options) (Backend, error) {
	switch {
	case spec == "" || spec == "sqlite":
		if dataDir == "" {
			return nil, fmt.Errorf("open session store: the SQLite store needs a data directory (set BOT_DATA_DIR, or BOT_STORE=memory)")
		}
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("open session store: %w", err)
		}
		return OpenSQLite(ctx, filepath.Join(dataDir, SQLiteFile), SQLiteOptions{Now: opts.Now, Limits: opts.Limits})
	case spec == "memory":
		return NewMemoryWith(MemoryOptions{Now: opts.Now, Limits: opts.Limits}), nil
	case strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://"):
		return OpenPostgres(ctx, spec, PostgresOptions{Now: opts.Now, Limits: opts.Limits})
	}
	return nil, fmt.Errorf("open session store: BOT_STORE=%q is not a store: use sqlite (the default), memory, or a postgres:// URL", RedactDSN(spec))
}
