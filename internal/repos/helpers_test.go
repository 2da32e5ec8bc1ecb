package repos

import (
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
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

// newLogger logs JSON at debug level into buf.
func newLogger(buf *logtest.Buffer) *slog.Logger {
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
