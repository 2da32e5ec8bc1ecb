package session

import (
	"context"
	"log/slog"
	"time"
)

// RunRetention purges sessions idle for longer than idle, and expired dedupe
// keys, now and then every interval, until ctx is done. Run it in its own
// goroutine; a failed purge is logged and retried at the next tick, since a
// store that is briefly unavailable should not stop retention for good.
// A nil logger discards.
func RunRetention(ctx context.Context, store Store, every, idle time.Duration, logger *slog.Logger) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "session-retention")
	purge := func() {
		before := time.Now().Add(-idle)
		n, err := store.Purge(ctx, before)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("purge failed; retrying at the next tick", "err", err, "every", every)
		case n > 0:
			logger.Info("purged idle sessions", "sessions", n, "idle", idle)
		}
	}
	purge()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			purge()
		}
	}
}
