//go:build linux

package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serve listens on a fresh data directory with h and serves until the
// test ends.
func serve(t *testing.T, h Handler, opts Options) (dataDir string, srv *Server) {
	t.Helper()
	dataDir = t.TempDir()
	srv, err := Listen(dataDir, h, opts)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return dataDir, srv
}

func echo(_ context.Context, req Request, _ func(string)) Response {
	return Response{Content: req.Tool + " " + string(req.Input) + " " + req.Key, Summary: "1 line", IsError: req.Tool == "bad"}
}

func TestCallRunsInTheService(t *testing.T) {
	dir, _ := serve(t, echo, Options{})
	for _, tc := range []struct {
		tool    string
		isError bool
	}{{"search_code", false}, {"bad", true}} {
		resp, err := Call(t.Context(), dir, Request{Key: "k1", Tool: tc.tool, Input: json.RawMessage(`{"pattern":"x"}`)}, nil)
		if err != nil {
			t.Fatalf("Call(%s): %v", tc.tool, err)
		}
		want := Response{Content: tc.tool + ` {"pattern":"x"} k1`, Summary: "1 line", IsError: tc.isError}
		if resp != want {
			t.Errorf("Call(%s) = %+v, want %+v", tc.tool, resp, want)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, Dir))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode = %v, %v; want 0700", fi.Mode(), err)
	}
	fi, err = os.Lstat(Path(dir))
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode = %v, %v; want a 0600 socket", fi.Mode(), err)
	}
}

func TestCallWithoutService(t *testing.T) {
	dir := t.TempDir()
	if _, err := Call(t.Context(), dir, Request{Tool: "x"}, nil); !errors.Is(err, ErrNoService) {
		t.Fatalf("Call with no socket = %v, want ErrNoService", err)
	}
	// A socket left by a process that died: nobody accepts on it.
	if err := os.Mkdir(filepath.Join(dir, Dir), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: Path(dir), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Call(t.Context(), dir, Request{Tool: "x"}, nil); !errors.Is(err, ErrNoService) {
		t.Fatalf("Call on a dead socket = %v, want ErrNoService", err)
	}
	// The next service replaces it.
	srv, err := Listen(dir, echo, Options{})
	if err != nil {
		t.Fatalf("Listen over a dead socket: %v", err)
	}
	go srv.Serve()
	defer srv.Close()
	if _, err := Call(t.Context(), dir, Request{Tool: "x"}, nil); err != nil {
		t.Fatalf("Call after the new service listens: %v", err)
	}
}

// One process takes the calls of a data directory; a second one leaves
// its socket alone, and takes over once the first is gone.
func TestListenTwice(t *testing.T) {
	dir, first := serve(t, echo, Options{})
	if _, err := Listen(dir, echo, Options{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen = %v, want ErrInUse", err)
	}
	if _, err := Call(t.Context(), dir, Request{Tool: "x"}, nil); err != nil {
		t.Fatalf("Call after the second Listen: %v", err)
	}
	first.Close()
	if _, err := os.Lstat(Path(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after Close: %v, want gone", err)
	}
	second, err := Listen(dir, echo, Options{})
	if err != nil {
		t.Fatalf("Listen after the first closed: %v", err)
	}
	second.Close()
}

func TestListenRefusesABadDirectory(t *testing.T) {
	t.Run("not a directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, Dir), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Listen(dir, echo, Options{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("Listen = %v, want not a directory", err)
		}
	})
	t.Run("a symlink elsewhere", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), t.TempDir()
		if err := os.Symlink(elsewhere, filepath.Join(dir, Dir)); err != nil {
			t.Fatal(err)
		}
		if _, err := Listen(dir, echo, Options{}); err == nil {
			t.Fatal("Listen through a symlinked directory succeeded")
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
			t.Errorf("Listen wrote through the symlink: %v", entries)
		}
	})
	t.Run("open to others", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, Dir), 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(dir, Dir), 0o777)
		srv, err := Listen(dir, echo, Options{})
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
		srv.Close()
		if fi, _ := os.Stat(filepath.Join(dir, Dir)); fi.Mode().Perm() != 0o700 {
			t.Errorf("mode = %v, want 0700", fi.Mode().Perm())
		}
	})
	t.Run("path too long for a socket", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
		if _, err := Listen(dir, echo, Options{}); err == nil || !strings.Contains(err.Error(), "shorter BOT_DATA_DIR") {
			t.Fatalf("Listen = %v, want a path too long", err)
		}
		if _, err := Call(t.Context(), dir, Request{}, nil); !errors.Is(err, ErrNoService) {
			t.Fatalf("Call = %v, want ErrNoService", err)
		}
	})
}

// A full service refuses at once rather than queue: the caller runs the
// call itself.
func TestBusyIsRefused(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	dir, _ := serve(t, func(ctx context.Context, req Request, _ func(string)) Response {
		close(started)
		<-release
		return Response{Content: "slow"}
	}, Options{MaxConcurrent: 1})
	done := make(chan error, 1)
	go func() {
		_, err := Call(t.Context(), dir, Request{Tool: "slow"}, nil)
		done <- err
	}()
	<-started
	if _, err := Call(t.Context(), dir, Request{Tool: "other"}, nil); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("Call while busy = %v, want ErrRefused (busy)", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the slow call: %v", err)
	}
}

// A caller that gives up (Ctrl-C) ends the call in the service; Close
// ends the ones still running.
func TestCallEnds(t *testing.T) {
	ended := make(chan error, 2)
	running := make(chan struct{}, 2)
	dir, srv := serve(t, func(ctx context.Context, req Request, _ func(string)) Response {
		running <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return Response{Content: "late"}
	}, Options{})

	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-running; cancel() }()
	if _, err := Call(ctx, dir, Request{Tool: "x"}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call cancelled = %v, want context.Canceled", err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the service's call went on after its caller hung up")
	}

	go func() { <-running; srv.Close() }()
	if _, err := Call(t.Context(), dir, Request{Tool: "x"}, nil); err != nil {
		// The late result may or may not make it out before the socket closes.
		t.Logf("Call during Close: %v", err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("Close left a call running")
	}
}

// What is not one small JSON request gets a refusal, and the service goes
// on; a panicking handler too.
func TestBadRequests(t *testing.T) {
	dir, _ := serve(t, func(_ context.Context, req Request, _ func(string)) Response {
		if req.Tool == "boom" {
			panic("boom")
		}
		return Response{Content: "ok"}
	}, Options{})
	for name, body := range map[string]string{
		"not json":  "hello\n",
		"too large": `{"tool":"x","input":"` + strings.Repeat("a", maxRequest) + `"}`,
	} {
		c, err := net.Dial("unix", Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		go io.WriteString(c, body)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var resp Response
		err = json.NewDecoder(c).Decode(&resp)
		c.Close()
		if err != nil || !strings.Contains(resp.Refused, "not a tool call") {
			t.Errorf("%s: response %+v, %v; want a refusal", name, resp, err)
		}
	}
	if _, err := Call(t.Context(), dir, Request{Tool: "boom"}, nil); !errors.Is(err, ErrRefused) {
		t.Errorf("a panicking call = %v, want ErrRefused", err)
	}
	if resp, err := Call(t.Context(), dir, Request{Tool: "x"}, nil); err != nil || resp.Content != "ok" {
		t.Errorf("a call after the bad ones = %+v, %v", resp, err)
	}
}

// Another user who gets to the socket (here: the directory and the socket
// opened up on purpose) is refused by the kernel's word on who it is.
func TestAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	called := make(chan struct{}, 1)
	dir, _ := serve(t, func(context.Context, Request, func(string)) Response {
		called <- struct{}{}
		return Response{Content: "secret"}
	}, Options{})
	for _, p := range []string{filepath.Dir(dir), dir, filepath.Join(dir, Dir), Path(dir)} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	// Connect as nobody: SO_PEERCRED records the effective user at
	// connect time. Set back at once (for every thread of the process).
	if err := syscall.Setresuid(-1, 65534, -1); err != nil {
		t.Fatalf("become nobody: %v", err)
	}
	c, dialErr := net.Dial("unix", Path(dir))
	if err := syscall.Setresuid(-1, 0, -1); err != nil {
		t.Fatalf("become root again: %v", err)
	}
	if dialErr != nil {
		t.Fatalf("dial as nobody: %v", dialErr)
	}
	defer c.Close()
	go json.NewEncoder(c).Encode(Request{Tool: "x"})
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(c)
	if len(b) != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
		t.Errorf("another user read %q, %v; want the connection closed with nothing", b, err)
	}
	select {
	case <-called:
		t.Error("the call of another user ran")
	default:
	}
}

// Lines of progress reach the caller in order, before the result.
func TestProgress(t *testing.T) {
	dir, _ := serve(t, func(_ context.Context, _ Request, progress func(string)) Response {
		progress("Indexing r@abc…")
		progress("")
		progress(" 3 files in 0.1s\n")
		return Response{Content: "done"}
	}, Options{})
	var got []string
	resp, err := Call(t.Context(), dir, Request{Tool: "x"}, func(s string) { got = append(got, s) })
	if err != nil || resp.Content != "done" {
		t.Fatalf("Call = %+v, %v", resp, err)
	}
	if want := []string{"Indexing r@abc…", " 3 files in 0.1s\n"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("progress = %q, want %q", got, want)
	}
}
