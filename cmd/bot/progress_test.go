//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// openPTY opens a pseudo-terminal: what the command writes to tty, a
// terminal to it, the test reads from out until the command and the test
// have both closed tty.
func openPTY(t *testing.T) (tty *os.File, out func() string) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("name the pseudo-terminal: %v", e)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal side: %v", err)
	}
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&buf, m) // ends with EIO once every holder of tty closed it
	}()
	return tty, func() string { tty.Close(); <-done; return buf.String() }
}

// manyFiles is a committed checkout large enough that indexing it takes a
// moment, so a command started with it is caught while the index builds.
func manyFiles(t *testing.T, n int) string {
	t.Helper()
	files := map[string]string{"README.md": "# Many\n"}
	for i := range n {
		files[fmt.Sprintf("pkg%d/f%d.go", i%20, i)] = fmt.Sprintf("package pkg%d\n\n// F%d does %d things.\nfunc F%d(x int) int { return x + %d }\n\ntype T%d struct{ A, B int }\n\nfunc (t T%d) M() int { return t.A + F%d(t.B) }\n", i%20, i, i, i, i, i, i, i)
	}
	r := gitexectest.Init(t, "")
	r.Commit(gitexectest.Commit{Write: files})
	return r.Dir
}

// On a terminal, bot tool says that it is indexing, and how that ended,
// while the first call at a commit builds the index: in its own process,
// and handed to a bot serve that is still building it.
func TestToolShowsIndexingOnATerminal(t *testing.T) {
	repo := manyFiles(t, 1500)
	run := func(t *testing.T, env []string, args ...string) (stdout, terminal string) {
		t.Helper()
		tty, read := openPTY(t)
		cmd := exec.Command(botPath, append([]string{"tool"}, args...)...)
		var out bytes.Buffer
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = append(env, "TERM=xterm"), t.TempDir(), &out, tty
		if err := cmd.Run(); err != nil {
			t.Fatalf("bot tool: %v\n%s", err, read())
		}
		return out.String(), read()
	}
	check := func(t *testing.T, stdout, terminal string) {
		t.Helper()
		if !strings.Contains(stdout, "1 definition") || !strings.Contains(stdout, "func F7(x int) int") {
			t.Errorf("stdout:\n%s", stdout)
		}
		for _, want := range []string{"Indexing ", "@", " files in "} {
			if !strings.Contains(terminal, want) {
				t.Errorf("the terminal lacks %q:\n%q", want, terminal)
			}
		}
	}

	t.Run("here", func(t *testing.T) {
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "BOT_DATA_DIR=" + t.TempDir()}
		stdout, terminal := run(t, env, "--repo", repo, "find_symbol", `{"name":"F7"}`)
		check(t, stdout, terminal)
	})

	t.Run("handed to the service", func(t *testing.T) {
		w := newWorld(t, "REPO_PATH="+repo)
		p := w.start()
		if strings.Contains(p.logs.String(), `"msg":"code index ready"`) {
			t.Fatal("the service indexed the checkout before it connected: make it larger, so the call finds the index building")
		}
		stdout, terminal := run(t, w.env, "find_symbol", `{"name":"F7"}`)
		check(t, stdout, terminal)
		if handedCalls(p) != 1 {
			t.Errorf("the service ran %d calls, want 1", handedCalls(p))
		}
	})
}
