package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM while the service is still starting (here: cloning a
// repository over an ssh that hangs) is a clean stop: exit 0, said in the
// log, and soon, not a failure for a supervisor to report or restart.
func TestStopWhileStarting(t *testing.T) {
	bin := t.TempDir()
	marker := filepath.Join(bin, "ssh-started")
	script := "#!/bin/sh\ntouch '" + marker + "'\nexec sleep 60\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "askrepo.yaml")
	if err := os.WriteFile(cfg, []byte("repos:\n  - name: slow\n    url: git@git.example.com:acme/slow.git\n    channels: [\"*\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, "BOT_CONFIG="+cfg, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	p := &proc{cmd: exec.Command(botPath), logs: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Env, p.cmd.Dir = w.env, t.TempDir()
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("bot output:\n%s", p.logs.String())
		}
	})
	ctx := w.ctx()
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the clone never reached ssh")
		case <-p.done:
			t.Fatalf("the bot exited before cloning: %v", p.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	began := time.Now()
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("stopping took %v: the hung clone held the process", took)
	}
	if logs := p.logs.String(); !strings.Contains(logs, "stopped before serving") {
		t.Errorf("the log does not say it stopped before serving:\n%s", logs)
	}
}

// A SIGTERM while Slack has not yet answered the bot's first call is a clean
// stop too.
func TestStopWhileSlackAnswersTheFirstCall(t *testing.T) {
	w := newWorld(t)
	release := w.slack.Hold("auth.test")
	defer release()
	p := w.launch()
	if _, err := w.slack.WaitCalls(w.ctx(), "auth.test", 1); err != nil {
		t.Fatalf("auth.test never called: %v", err)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	if logs := p.logs.String(); !strings.Contains(logs, "stopped before serving") {
		t.Errorf("the log does not say it stopped before serving:\n%s", logs)
	}
}
