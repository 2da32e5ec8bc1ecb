package repos

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHelperProcessHoldsALease is not a test: TestAnotherProcess runs the
// test binary with it as a process of its own, which takes a lease, says
// where, and holds it until killed.
func TestHelperProcessHoldsALease(t *testing.T) {
	data, url := os.Getenv("ASKREPO_TEST_HOLDER_DATA"), os.Getenv("ASKREPO_TEST_HOLDER_URL")
	if data == "" {
		t.Skip("a helper process of TestAnotherProcess")
	}
	m, err := New(t.Context(), []Spec{{Name: "r", URL: url, Channels: []string{"*"}}}, Options{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	l := acquire(t, m, "r")
	fmt.Printf("LEASE %s\n", l.Dir)
	io.Copy(io.Discard, os.Stdin) // until killed
}

// TestAnotherProcess: a Manager does not touch the worktree a live process
// leases in the same DataDir, and removes it once that process is killed.
func TestAnotherProcess(t *testing.T) {
	up, _, data, spec := sharedData(t, map[string]string{"f": "1"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessHoldsALease$")
	cmd.Env = append(os.Environ(), "ASKREPO_TEST_HOLDER_DATA="+data, "ASKREPO_TEST_HOLDER_URL="+up.URL)
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lease := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if dir, ok := strings.CutPrefix(sc.Text(), "LEASE "); ok {
				lease <- dir
			}
		}
		close(lease)
	}()
	var held string
	select {
	case held = <-lease:
	case <-time.After(guard):
		cmd.Process.Kill()
		t.Fatal("the helper process took no lease")
	}
	if held == "" {
		t.Fatal("the helper process ended without a lease")
	}

	m := newManager(t, spec, Options{DataDir: data})
	up.commit("main", map[string]string{"f": "2"})
	if err := m.SyncNow(t.Context(), "r"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(held, "f")); got != "1" {
		t.Errorf("the live process's lease reads %q, want 1", got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	up.commit("main", map[string]string{"f": "3"})
	if err := m.SyncNow(t.Context(), "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(held)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the killed process's directory %s is still there (err %v)", filepath.Dir(held), err)
	}
}
