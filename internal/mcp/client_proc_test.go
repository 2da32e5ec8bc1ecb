//go:build linux

package mcp

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process a stdio server started ends with the server: closing the
// server's connection reaches only the server's own process, so what is
// left of its process group is killed.
func TestClientServerChildrenEnd(t *testing.T) {
	f := newClientFixture(t, 30*time.Second, stdioSpec("npx", "spawner"))
	res := f.call(f.toolbox(""), "npx__spawn", `{}`, 30*time.Second)
	pid, err := strconv.Atoi(res.Content)
	if err != nil {
		t.Fatalf("spawn = %+v", res)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !processAlive(pid) {
		t.Fatalf("the server's child %d is not running", pid)
	}
	_ = f.c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's child %d outlived it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs: it exists and is not a zombie waiting
// for a parent to reap it.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
