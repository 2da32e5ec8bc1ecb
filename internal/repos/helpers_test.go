package repos

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// git runs git for a test, with no user or system config, and fails the
// test on error.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// remote is a bare repository in a temp dir reached by a file:// URL, with
// a work clone to commit through.
type remote struct {
	t    testing.TB
	bare string
	work string
	URL  string
}

func newRemote(t testing.TB) *remote {
	t.Helper()
	base := t.TempDir()
	r := &remote{t: t, bare: filepath.Join(base, "remote.git"), work: filepath.Join(base, "work")}
	git(t, base, "init", "--quiet", "--bare", "--initial-branch=main", r.bare)
	git(t, base, "init", "--quiet", "--initial-branch=main", r.work)
	r.URL = "file://" + r.bare
	return r
}

// commit writes files (path → content) on branch and pushes; it returns
// the new commit's SHA.
func (r *remote) commit(branch string, files map[string]string) string {
	r.t.Helper()
	if cur := git(r.t, r.work, "symbolic-ref", "--short", "HEAD"); cur != branch {
		if exec.Command("git", "-C", r.work, "show-ref", "--verify", "--quiet", "refs/heads/"+branch).Run() == nil {
			git(r.t, r.work, "checkout", "--quiet", branch)
		} else {
			git(r.t, r.work, "checkout", "--quiet", "-b", branch)
		}
	}
	for p, c := range files {
		full := filepath.Join(r.work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	git(r.t, r.work, "add", "-A")
	git(r.t, r.work, "commit", "--quiet", "-m", "change")
	git(r.t, r.work, "push", "--quiet", "--force", r.bare, "HEAD:refs/heads/"+branch)
	return git(r.t, r.work, "rev-parse", "HEAD")
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
