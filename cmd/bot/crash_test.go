package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/logging/logtest"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// waitExit waits for a process that kills itself and returns its exit code,
// -signal when killed.
func (p *proc) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("bot still running 30s after it should have crashed\n%s", p.logs.String())
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -int(ws.Signal())
	}
	return p.cmd.ProcessState.ExitCode()
}

// A question Slack delivered and the bot acked is answered by the next
// start even though the process was killed before its turn began: Slack
// does not deliver an acked event again, so the store had it first. It is
// answered once, and a late redelivery of it is still a duplicate.
func TestCrashAfterAckAnsweredByNextStart(t *testing.T) {
	w := newWorld(t, "ASKREPO_TEST_CRASH_AT=after-ack")
	p := w.start()
	root := w.slack.NextTS()
	ev := slacktest.AppMention("C1", "U1", "<@UBOT> what does widget do?", root, "")
	ev.EventID = "EvCrash"
	env := w.slack.SendEvent(ev)
	if _, err := w.slack.WaitAck(w.ctx(), env); err != nil {
		t.Fatalf("the event was not acked: %v", err)
	}
	if code := p.waitExit(t); code != -int(syscall.SIGKILL) {
		t.Fatalf("exit code = %d, want SIGKILL at the crash point\n%s", code, p.logs.String())
	}
	if !strings.Contains(p.logs.String(), `"point":"after-ack"`) {
		t.Fatalf("the bot did not stop at the crash point:\n%s", p.logs.String())
	}
	if n := len(w.model.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times before the crash; the turn must not have begun", n)
	}

	w.env = append(w.env, "ASKREPO_TEST_CRASH_AT=") // the last value wins
	p = w.start()
	w.waitAnswers(root, 1)
	w.waitLog(p, `"outcome":"answered"`)
	redelivery := w.slack.SendEvent(ev.Retry(1, "timeout"))
	if _, err := w.slack.WaitAck(w.ctx(), redelivery); err != nil {
		t.Fatal(err)
	}
	w.waitLog(p, `"reason":"duplicate"`)
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code = %d, want 0", code)
	}
	if got := len(w.answers(root)); got != 1 {
		t.Errorf("answers = %d, want 1:\n%s", got, w.threadText(root))
	}
	if n := strings.Count(p.logs.String(), `"outcome":"answered"`); n != 1 {
		t.Errorf("turns answered = %d, want 1", n)
	}
	// The real wiring's log: each key once, durations as durations,
	// one summary line for the answer.
	summaries := 0
	for _, m := range logtest.Lines(t, p.logs.String(), "duration", "queued", "grace", "lease_ttl", "waited", "retry_after", "every") {
		if m["level"] == "INFO" && (m["msg"] == "turn" || m["msg"] == "turn done") {
			summaries++
		}
	}
	if summaries != 1 {
		t.Errorf("%d summary lines for one answer, want 1", summaries)
	}
}

// longAnswer reads README.md and then answers in three paragraphs, each too
// long to share a Slack message with another: three messages.
func longAnswer(req llmtest.Request) llmtest.Reply {
	if req.Last().Role != "tool" {
		return readmeThenAnswer(req)
	}
	var paras []string
	for _, w := range []string{"alpha", "bravo", "charlie"} {
		paras = append(paras, strings.TrimSpace(strings.Repeat(w+" ", 1500)))
	}
	return llmtest.Reply{Content: strings.Join(paras, "\n\n")}
}

// A crash between two parts of a long answer: the next start posts the
// parts not yet posted, once each, without asking the model again.
func TestCrashBetweenPartsPostsTheRest(t *testing.T) {
	w := newWorld(t, "ASKREPO_TEST_CRASH_AT=between-parts")
	w.model.setScript(longAnswer)
	p := w.start()
	root, _ := w.mention("what does widget do?", "")
	if code := p.waitExit(t); code != -int(syscall.SIGKILL) {
		t.Fatalf("exit code = %d, want SIGKILL at the crash point\n%s", code, p.logs.String())
	}
	if got := len(w.answers(root)); got != 1 {
		t.Fatalf("parts posted before the crash = %d, want 1", got)
	}

	w.env = append(w.env, "ASKREPO_TEST_CRASH_AT=")
	p = w.start()
	w.waitAnswers(root, 3)
	w.waitLog(p, `"outcome":"answered"`)
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code = %d, want 0", code)
	}
	checkParts(t, w.answers(root), "alpha", "bravo", "charlie")
	if n := strings.Count(w.threadText(root), "interrupted by a restart"); n != 0 {
		t.Errorf("the thread was told of the restart %d times; the rest of the answer just follows", n)
	}
	if n := len(w.model.Requests()); n != 2 {
		t.Errorf("model requests = %d, want 2 (the answer is in the store)", n)
	}
}

// serve against a Slack API that is not there says so, and does not send
// the operator after a token that was never checked.
func TestServeSaysSlackCannotBeReached(t *testing.T) {
	env := map[string]string{
		"REPO_PATH":       testRepo(t),
		"BOT_DATA_DIR":    t.TempDir(),
		"BOT_HTTP_ADDR":   "",
		"SLACK_BOT_TOKEN": slacktest.DefaultBotToken,
		"SLACK_APP_TOKEN": slacktest.DefaultAppToken,
		"SLACK_API_URL":   "http://127.0.0.1:1/api/",
	}
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"serve"}, envMap(env), strings.NewReader(""), &out, &errOut)
	if err == nil {
		t.Fatal("want an error")
	}
	if !strings.Contains(err.Error(), "could not reach the Slack API at http://127.0.0.1:1/api/") || strings.Contains(err.Error(), "OAuth") {
		t.Errorf("error = %v; want that the Slack API could not be reached, and no word about the token", err)
	}
	if strings.Contains(errOut.String(), "serving Slack") {
		t.Errorf("logged serving Slack although Slack was never reached:\n%s", errOut.String())
	}
}
