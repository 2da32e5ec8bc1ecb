package logtest_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/askrepo/askrepo/internal/logging/logtest"
)

// Loggers on many goroutines write into one Buffer while the test reads it;
// every line arrives whole (run with -race).
func TestBufferTakesConcurrentWrites(t *testing.T) {
	var buf logtest.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				log.Info("line", "writer", i, "n", j)
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	lines := logtest.Lines(t, buf.String())
	if len(lines) != 8*50 {
		t.Fatalf("got %d lines, want %d", len(lines), 8*50)
	}
	if got := buf.String(); !strings.Contains(got, fmt.Sprintf(`"writer":%d`, 7)) {
		t.Errorf("no line of writer 7 in %q", got)
	}
}
