package repos

import (
	"bytes"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// remote is the kit's bare file:// repository with a work tree; commit
// is the one change these tests make: files on a branch, pushed.
type remote struct{ *gitexectest.Remote }

func newRemote(t testing.TB) remote { return remote{gitexectest.NewRemote(t)} }

// commit writes files (path → content) on branch and pushes; it returns
// the new commit's SHA.
func (r remote) commit(branch string, files map[string]string) string {
	return r.Push(branch, gitexectest.Commit{Write: files})
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logBuffer is a concurrency-safe sink for a JSON logger at debug level.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogger(buf *logBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// syncRecorder collects OnSync calls.
type syncRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (s *syncRecorder) record(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.calls = append(s.calls, name+": "+err.Error())
	} else {
		s.calls = append(s.calls, name+": ok")
	}
}

func (s *syncRecorder) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}
