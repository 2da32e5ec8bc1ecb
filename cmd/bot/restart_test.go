package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// botPath is the bot binary the restart tests run as a real process, built
// once for the package by TestMain.
var botPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "askrepo-bot-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	botPath = filepath.Join(dir, "bot")
	out, err := exec.Command("go", "build", "-o", botPath, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build the bot: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// modelServer is the model (llmtest) that outlives the bot processes of a
// test: each request is answered by the script of the moment, and every
// reply reports 100 prompt tokens per message and 10 out.
type modelServer struct{ *llmtest.Server }

func newModelServer(t *testing.T) *modelServer {
	return &modelServer{llmtest.New(t, nil, llmtest.WithKey("sk-test"))}
}

func (m *modelServer) setScript(f llmtest.Script) {
	m.SetScript(func(r llmtest.Request) llmtest.Reply {
		rep := f(r)
		rep.Usage = &llmtest.Usage{Prompt: 100 * len(r.Chat.Messages), Output: 10}
		return rep
	})
}

// readmeThenAnswer reads README.md, then answers quoting the question.
func readmeThenAnswer(req llmtest.Request) llmtest.Reply {
	if req.Last().Role == "tool" {
		q := req.LastUser()
		if i := strings.Index(q, "</context>"); i >= 0 {
			q = q[i+len("</context>"):]
		}
		return llmtest.Reply{Content: "Answer to: " + strings.TrimSpace(q)}
	}
	return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_r", Name: "read_file", Args: `{"path":"README.md"}`}}}
}

// holdAfterTools reads README.md and then never answers: the request
// stays open until the bot that asked is gone.
func holdAfterTools(req llmtest.Request) llmtest.Reply {
	if req.Last().Role == "tool" {
		return llmtest.Reply{Hang: true}
	}
	return readmeThenAnswer(req)
}

// world is what stays across restarts: the fake Slack, the model server,
// the checkout and the data dir.
type world struct {
	t     *testing.T
	slack *slacktest.Server
	model *modelServer
	env   []string
}

func newWorld(t *testing.T, extra ...string) *world {
	srv := slacktest.New()
	t.Cleanup(srv.Close)
	m := newModelServer(t)
	m.setScript(readmeThenAnswer)
	home := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"SLACK_BOT_TOKEN=" + slacktest.DefaultBotToken,
		"SLACK_APP_TOKEN=" + slacktest.DefaultAppToken,
		"SLACK_API_URL=" + srv.APIURL(),
		"BOT_SLACK_UI=messages",
		"OPENAI_API_KEY=sk-test",
		"OPENAI_BASE_URL=" + m.URL,
		"OPENAI_STREAM=false",
		"REPO_PATH=" + testRepo(t),
		"REPO_NAME=widget",
		"BOT_DATA_DIR=" + t.TempDir(),
		"BOT_HTTP_ADDR=127.0.0.1:0",
		"BOT_LOG_LEVEL=debug",
	}
	return &world{t: t, slack: srv, model: m, env: append(env, extra...)}
}

// lockedBuffer collects a process's output, or a terminal's, while a test
// reads it.
type lockedBuffer = logtest.Buffer

// proc is one run of the bot binary.
type proc struct {
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
	err  error
}

// start runs the bot and waits until it holds a Socket Mode connection.
func (w *world) start() *proc {
	w.t.Helper()
	p := w.launch()
	// Its own log, not the fake's count of live connections: a killed
	// predecessor's socket may still count until the fake notices.
	w.waitLog(p, `"connected":true`)
	return p
}

// launch runs the bot without waiting for anything. It is safe to call from
// several goroutines at once.
func (w *world) launch() *proc {
	p := &proc{cmd: exec.Command(botPath), logs: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Env = w.env
	p.cmd.Dir = w.t.TempDir() // no stray .env
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	w.t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if w.t.Failed() {
			w.t.Logf("bot output:\n%s", p.logs.String())
		}
	})
	return p
}

// stop sends sig and returns the exit code.
func (p *proc) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("bot still running 30s after %s\n%s", sig, p.logs.String())
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("wait: %v", p.err)
	}
	return 0
}

// waitLog waits for a log line containing s.
func (w *world) waitLog(p *proc, s string) {
	w.t.Helper()
	ctx := w.ctx()
	for !strings.Contains(p.logs.String(), s) {
		select {
		case <-ctx.Done():
			w.t.Fatalf("no log line with %q:\n%s", s, p.logs.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (w *world) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	w.t.Cleanup(cancel)
	return ctx
}

// waitModelRequests waits until the model server has seen n requests.
func (w *world) waitModelRequests(n int) {
	w.t.Helper()
	ctx := w.ctx()
	for len(w.model.Requests()) < n {
		select {
		case <-ctx.Done():
			w.t.Fatalf("model requests = %d, want %d", len(w.model.Requests()), n)
		case <-w.model.Arrived():
		}
	}
}

// answers are the bot's messages in a thread with a markdown block.
func (w *world) answers(root string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range w.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID) {
		if slices.Contains(m.BlockTypes(), "markdown") {
			out = append(out, m)
		}
	}
	return out
}

// checkParts checks that an answer was posted as one message per part, in
// order, each part (a word it carries) in exactly one message.
func checkParts(t *testing.T, parts []slacktest.Message, words ...string) {
	t.Helper()
	if len(parts) != len(words) {
		t.Fatalf("answer messages = %d, want %d", len(parts), len(words))
	}
	for i, word := range words {
		n := 0
		for _, m := range parts {
			if strings.Contains(m.AllText(), word) {
				n++
			}
		}
		if n != 1 || !strings.Contains(parts[i].AllText(), word) {
			t.Errorf("part %q is in %d messages (want 1, message %d)", word, n, i)
		}
	}
}

func (w *world) waitAnswers(root string, n int) {
	w.t.Helper()
	_, err := w.slack.WaitFor(w.ctx(), func(*slacktest.State) bool { return len(w.answers(root)) >= n })
	if err != nil {
		w.t.Fatalf("thread %s: %d answers, want %d", root, len(w.answers(root)), n)
	}
}

func (w *world) threadText(root string) string {
	var b strings.Builder
	for _, m := range w.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID) {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}

func (w *world) mention(text, eventID string) (root string, ev slacktest.Event) {
	root = w.slack.NextTS()
	ev = slacktest.AppMention("C1", "U1", "<@UBOT> "+text, root, "")
	ev.EventID = eventID
	w.slack.SendEvent(ev)
	return root, ev
}

// askAndStop starts the bot, asks text in a new thread (as event eventID;
// "" for a fresh one), waits for the answer and the turn's log line, and
// stops the bot with SIGTERM, which must exit 0. It returns the thread's
// root and the event, for Slack to redeliver.
func (w *world) askAndStop(text, eventID string) (root string, ev slacktest.Event) {
	w.t.Helper()
	p := w.start()
	root, ev = w.mention(text, eventID)
	w.waitAnswers(root, 1)
	w.waitLog(p, `"msg":"turn"`)
	if code := p.stop(w.t, syscall.SIGTERM); code != 0 {
		w.t.Fatalf("exit code after SIGTERM = %d, want 0\n%s", code, p.logs.String())
	}
	return root, ev
}

// A stop with SIGTERM exits 0; the next start on the same data dir
// remembers the thread, answers a redelivered event once, and `bot
// sessions` shows the thread with its totals.
func TestRestartRemembers(t *testing.T) {
	w := newWorld(t)
	root, first := w.askAndStop("what does widget do?", "EvFirst")

	p := w.start()
	// Slack redelivers the first event after the restart.
	env := w.slack.SendEvent(first.Retry(1, "timeout"))
	if _, err := w.slack.WaitAck(w.ctx(), env); err != nil {
		t.Fatal(err)
	}
	w.waitLog(p, `"reason":"duplicate"`)
	w.slack.Reply("C1", "U1", "and how are sprockets made?", root)
	w.waitAnswers(root, 2)
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("second exit code = %d, want 0", code)
	}
	if got := len(w.answers(root)); got != 2 {
		t.Errorf("answers = %d, want 2 (the redelivery is not answered)", got)
	}
	reqs := w.model.Requests()
	last := reqs[len(reqs)-1]
	for _, want := range [][2]string{{"user", "what does widget do?"}, {"assistant", "Answer to: what does widget do?"}, {"user", "and how are sprockets made?"}} {
		if last.Has(want[0], want[1]) != 1 {
			t.Errorf("the follow-up's request has %d %s messages with %q, want 1: the thread was forgotten", last.Has(want[0], want[1]), want[0], want[1])
		}
	}

	var out bytes.Buffer
	cmd := exec.Command(botPath, "sessions")
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = w.env, t.TempDir(), &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bot sessions: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "T1/C1/"+root) || !strings.Contains(out.String(), "widget") {
		t.Errorf("bot sessions does not list the thread:\n%s", out.String())
	}
	// THREAD REPO TURNS …: COMMIT is blank, the checkout is not a git one.
	if fields := strings.Fields(lineWith(out.String(), root)); len(fields) < 5 || fields[2] != "2" {
		t.Errorf("bot sessions line %q, want 2 turns", lineWith(out.String(), root))
	}
}

func lineWith(s, sub string) string {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// A turn in flight is cut (SIGKILL, or SIGTERM after a short grace period)
// after its first step was stored; the next start tells the thread and
// resumes it from that step, exactly once.
func TestRestartResumesCutTurn(t *testing.T) {
	tests := []struct {
		name string
		sig  os.Signal
		code int    // exit code, -signal when killed
		note string // what the thread hears before the restart
	}{
		{"hard kill", syscall.SIGKILL, -int(syscall.SIGKILL), ""},
		{"SIGTERM past the grace period", syscall.SIGTERM, 0, "I will pick this up when I am back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "BOT_DRAIN_TIMEOUT=100ms")
			w.model.setScript(holdAfterTools)
			p := w.start()
			root, _ := w.mention("what does widget do?", "")
			w.waitModelRequests(2) // step 1 (read README.md) is stored; step 2 hangs
			if code := p.stop(t, tt.sig); code != tt.code {
				t.Fatalf("exit code = %d, want %d\n%s", code, tt.code, p.logs.String())
			}
			if tt.note != "" && !strings.Contains(w.threadText(root), tt.note) {
				t.Errorf("thread before the restart:\n%s\nwant %q", w.threadText(root), tt.note)
			}

			w.model.setScript(readmeThenAnswer)
			p = w.start()
			w.waitAnswers(root, 1)
			w.waitLog(p, `"outcome":"answered"`)
			if code := p.stop(t, syscall.SIGTERM); code != 0 {
				t.Fatalf("exit code = %d, want 0", code)
			}
			text := w.threadText(root)
			if n := strings.Count(text, "interrupted by a restart; I am picking it up where I left off"); n != 1 {
				t.Errorf("the thread was told %d times that the answer was interrupted, want once:\n%s", n, text)
			}
			if got := len(w.answers(root)); got != 1 {
				t.Errorf("answers = %d, want 1", got)
			}
			reqs := w.model.Requests()
			if len(reqs) != 3 {
				t.Fatalf("model requests = %d, want 3 (two before the cut, one to finish)", len(reqs))
			}
			resumed := reqs[2]
			if resumed.Last().Role != "tool" || resumed.Has("tool", "Widget turns sprockets into widgets.") != 1 || resumed.Has("user", "what does widget do?") != 1 {
				t.Errorf("the resumed request does not continue from step 1 with its result once: %+v", resumed.Chat.Messages)
			}
		})
	}
}

// Retention through the wiring: a start with a retention shorter than the
// thread's idle time purges it, and `bot sessions` no longer lists it.
func TestRestartPurgesIdleSessions(t *testing.T) {
	w := newWorld(t)
	w.askAndStop("what does widget do?", "")
	w.env = append(w.env, "BOT_RETENTION=1ms") // the last value wins
	p := w.start()
	w.waitLog(p, `"msg":"purged idle sessions"`)
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code = %d", code)
	}
	var out bytes.Buffer
	cmd := exec.Command(botPath, "sessions")
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = w.env, t.TempDir(), &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bot sessions: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "No sessions stored") {
		t.Errorf("bot sessions after the purge:\n%s", out.String())
	}
}

// Two processes started at once on one data dir after a crash: one serves
// and answers the cut turn once; the other waits for the data directory
// until the first stops, and finds nothing left to answer.
func TestRestartTwiceAtOnce(t *testing.T) {
	w := newWorld(t)
	w.model.setScript(holdAfterTools)
	p := w.start()
	root, _ := w.mention("what does widget do?", "")
	w.waitModelRequests(2)
	p.stop(t, syscall.SIGKILL)

	w.model.setScript(readmeThenAnswer)
	procs := make([]*proc, 2)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { procs[i] = w.launch() })
	}
	wg.Wait()
	w.waitAnswers(root, 1)
	ctx := w.ctx()
	logs := func() string { return procs[0].logs.String() + procs[1].logs.String() }
	for !strings.Contains(logs(), `"outcome":"answered"`) || !strings.Contains(logs(), waitingToServe) {
		select {
		case <-ctx.Done():
			t.Fatal("no turn answered, or no process waiting for the other")
		case <-time.After(5 * time.Millisecond):
		}
	}
	// The one waiting stops last: it takes over and finds nothing to do.
	if strings.Contains(procs[0].logs.String(), waitingToServe) {
		procs[0], procs[1] = procs[1], procs[0]
	}
	for _, p := range procs {
		if code := p.stop(t, syscall.SIGTERM); code != 0 {
			t.Errorf("exit code = %d", code)
		}
	}
	if got := len(w.answers(root)); got != 1 {
		t.Errorf("answers = %d, want 1:\n%s", got, w.threadText(root))
	}
	if n := strings.Count(logs(), `"outcome":"answered"`); n != 1 {
		t.Errorf("turns answered = %d, want 1", n)
	}
	if n := strings.Count(logs(), waitingToServe); n != 1 {
		t.Errorf("processes that waited = %d, want 1", n)
	}
}

// waitingToServe is in the log of a bot serve that waits for another one
// to stop serving from the same data directory.
const waitingToServe = "waiting for it to stop"

// A second start beside a running bot (a rolling restart on one host)
// leaves its running turn alone: it waits for the data directory; once the
// first has drained and stopped, it resumes the turn the first cut, which
// is answered once.
func TestSecondStartWaitsForTheRunningOne(t *testing.T) {
	w := newWorld(t, "BOT_DRAIN_TIMEOUT=200ms")
	w.model.setScript(holdAfterTools)
	first := w.start()
	root, _ := w.mention("what does widget do?", "")
	w.waitModelRequests(2)

	second := w.launch()
	w.waitLog(second, waitingToServe)
	// Given time to do harm: before, it recovered the running turn at once.
	time.Sleep(300 * time.Millisecond)
	if strings.Contains(second.logs.String(), "connecting to Slack") {
		t.Fatalf("the second start serves beside the first:\n%s", second.logs.String())
	}
	if n := len(w.model.Requests()); n != 2 {
		t.Fatalf("model requests while the first still runs = %d, want 2", n)
	}

	w.model.setScript(readmeThenAnswer)
	if code := first.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("first's exit code = %d", code)
	}
	w.waitAnswers(root, 1)
	w.waitLog(second, `"outcome":"answered"`)
	if code := second.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("second's exit code = %d", code)
	}
	if got := len(w.answers(root)); got != 1 {
		t.Errorf("answers = %d, want 1:\n%s", got, w.threadText(root))
	}
	if !strings.Contains(second.logs.String(), "recovering turns a restart cut off") {
		t.Errorf("the second did not recover the turn the first cut:\n%s", second.logs.String())
	}
}
