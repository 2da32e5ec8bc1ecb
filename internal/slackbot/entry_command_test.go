package slackbot

import (
	"encoding/json"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// ackText is the ephemeral reply a slash command's ack carried, "" for none.
func ackText(t testing.TB, a slacktest.Ack) string {
	t.Helper()
	if len(a.Payload) == 0 || string(a.Payload) == "null" {
		return ""
	}
	var p struct {
		ResponseType string `json:"response_type"`
		Text         string `json:"text"`
	}
	if err := json.Unmarshal(a.Payload, &p); err != nil {
		t.Fatalf("ack payload %s: %v", a.Payload, err)
	}
	if p.ResponseType != "ephemeral" {
		t.Errorf("ack payload response_type %q, want ephemeral", p.ResponseType)
	}
	return p.Text
}

// crashAfterAck is a Config.CrashAt that, once armed, ends the read loop
// right after the next event was recorded and acked, as a process that
// dies there.
type crashAfterAck struct {
	armed, once atomic.Bool
	crashed     chan struct{}
}

func newCrashAfterAck(armed bool) *crashAfterAck {
	c := &crashAfterAck{crashed: make(chan struct{})}
	c.armed.Store(armed)
	return c
}

func (c *crashAfterAck) at(point string) {
	if point == CrashAfterAck && c.armed.Load() && c.once.CompareAndSwap(false, true) {
		close(c.crashed)
		runtime.Goexit()
	}
}

// stop waits for the crash and for the ack of envelope to reach the fake
// (slack-go writes it after the read loop queued it), then stops what is
// left of h.
func (c *crashAfterAck) stop(h *harness, envelope string) {
	h.t.Helper()
	select {
	case <-c.crashed:
	case <-h.ctx().Done():
		h.t.Fatal("the bot never reached the point after the ack")
	}
	if _, err := h.slack.WaitAck(h.ctx(), envelope); err != nil {
		h.t.Fatal(err)
	}
	if err := h.stop(); err != nil {
		h.t.Fatal(err)
	}
}

// commandRoot waits for the top-level message the bot posts for a command
// in channel and returns it.
func (h *harness) commandRoot(channel string) slacktest.Message {
	h.t.Helper()
	msgs, err := h.slack.WaitMessages(h.ctx(), channel, "", 1)
	if err != nil {
		h.t.Fatal(err)
	}
	return msgs[0]
}

func TestCommandPostsTheQuestionAndAnswersInItsThread(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	env, _ := h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "what does this repo do?"})
	ack, err := h.slack.WaitAck(h.ctx(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := ackText(t, ack); got != "" {
		t.Errorf("a question's ack replied %q, want nothing (the question is posted)", got)
	}
	root := h.commandRoot("C1")
	if !strings.Contains(root.Text, "<@U1> asked") || !strings.Contains(root.Text, "> what does this repo do?") {
		t.Errorf("root %q: want the question quoted and attributed to the asker", root.Text)
	}
	h.waitReaction("C1", root.TS, reactDone)
	got := answers(h.slack.Snapshot().BotMessages("C1", root.TS, slacktest.DefaultBotID))
	if len(got) != 1 || !strings.Contains(got[0].AllText(), "Answer** to: what does this repo do?") {
		t.Fatalf("answers in the command's thread: %+v", got)
	}

	// Redelivered: the same invocation (trigger_id) is answered once.
	if _, err := h.slack.Redeliver(env, "timeout"); err != nil {
		t.Fatal(err)
	}
	// A mention behind it is a barrier: the intake handles events in order.
	barrier := h.mention("C1", "barrier", "")
	h.waitReaction("C1", barrier, reactDone)
	h.waitTurns(2)
	if n := len(h.slack.Snapshot().BotMessages("C1", "", slacktest.DefaultBotID)); n != 1 {
		t.Errorf("%d top-level bot messages after a redelivery, want 1", n)
	}

	// A reply in the thread is a follow-up like any other.
	h.slack.Reply("C1", "U2", "and main.go?", root.TS)
	h.waitTurns(3)
	if n := len(answers(h.slack.Snapshot().BotMessages("C1", root.TS, slacktest.DefaultBotID))); n != 2 {
		t.Errorf("%d answers in the command's thread after a follow-up, want 2", n)
	}
}

func TestCommandEphemeralReplies(t *testing.T) {
	tests := []struct {
		name, channel, text, want string
	}{
		{"help", "C1", "help", "/askrepo repos"},
		{"no text is help", "C1", "  ", "Ask me about the code"},
		{"repos", "C1", "repos", "*" + testRepoName + "*"},
		{"channel not allowed", "C9", "what does this repo do?", noteNotEnabled},
		{"repos where not allowed", "C9", "repos", noteNotEnabled},
		{"unknown repository", "C1", "in payments: how are refunds retried?", `no repository called "payments"`},
		{"a choice and no question", "C1", "in " + testRepoName + ":", "Ask me a question about " + testRepoName},
	}
	h := newHarness(t, harnessOpts{cfg: func(c *Config) { c.AllowChannels = []string{"C1"} }})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: tt.channel, Text: tt.text})
			ack, err := h.slack.WaitAck(h.ctx(), env)
			if err != nil {
				t.Fatal(err)
			}
			if got := ackText(t, ack); !strings.Contains(got, tt.want) {
				t.Errorf("ack reply %q, want it to contain %q", got, tt.want)
			}
		})
	}
	// Nothing was posted and nothing was read.
	for _, m := range h.slack.Messages() {
		if m.BotID == slacktest.DefaultBotID {
			t.Errorf("the bot posted %q; every reply should be the ack's", m.Text)
		}
	}
	if n := len(h.ai.Requests()); n != 0 {
		t.Errorf("the model got %d requests, want none", n)
	}
}

// A command's text is posted as typed: tokens in it mention nobody.
func TestCommandQuestionCannotMention(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "<!channel> <@U2> why? <https://evil.example|docs>"})
	root := h.commandRoot("C1")
	for _, tok := range []string{"<!channel>", "<@U2>", "<https://"} {
		if strings.Contains(root.Text, tok) {
			t.Errorf("root %q carries the token %s", root.Text, tok)
		}
	}
	if !strings.Contains(root.Text, "&lt;!channel&gt;") {
		t.Errorf("root %q: want the text escaped", root.Text)
	}
}

// A process that dies right after acking a command leaves it to the next
// start, which posts the question and answers it once.
func TestCommandAnsweredAfterRestart(t *testing.T) {
	crash := newCrashAfterAck(true)
	h1 := newHarness(t, harnessOpts{cfg: func(c *Config) { c.CrashAt = crash.at }})
	env, _ := h1.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "what does this repo do?"})
	crash.stop(h1, env)
	if n := len(h1.slack.Snapshot().BotMessages("C1", "", slacktest.DefaultBotID)); n != 0 {
		t.Fatalf("%d messages posted before the restart, want none", n)
	}
	h2 := newHarness(t, harnessOpts{slack: h1.slack, ai: h1.ai, store: h1.store})
	root := h2.commandRoot("C1")
	h2.waitReaction("C1", root.TS, reactDone)
	h2.waitTurns(1)
	if n := len(answers(h2.slack.Snapshot().BotMessages("C1", root.TS, slacktest.DefaultBotID))); n != 1 {
		t.Errorf("%d answers after the restart, want 1", n)
	}
	if n := len(h2.slack.Snapshot().BotMessages("C1", "", slacktest.DefaultBotID)); n != 1 {
		t.Errorf("%d roots after the restart, want 1", n)
	}
}

// A question the bot cannot post (it is not in the channel) is told to the
// asker alone, and not answered.
func TestCommandThatCannotBePostedTellsTheAsker(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.slack.FailNext("chat.postMessage", slacktest.SlackError("not_in_channel"))
	h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "what does this repo do?"})
	calls, err := h.slack.WaitCalls(h.ctx(), "response_url", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls[0].Params.Get("text"); !strings.Contains(got, "/invite @askrepo") || calls[0].Params.Get("response_type") != "ephemeral" {
		t.Errorf("response_url got %q (%s), want an ephemeral invitation", got, calls[0].Params.Get("response_type"))
	}
	if n := len(h.ai.Requests()); n != 0 {
		t.Errorf("the model got %d requests, want none", n)
	}
}

// The bare broadcast words a command's asker types are posted by the bot,
// which may broadcast where the asker may not: they are defused, in any
// letter case.
func TestCommandQuestionCannotBroadcast(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "@here @Channel @everyone: why does the build fail?"})
	root := h.commandRoot("C1")
	for _, word := range []string{"@here", "@Channel", "@everyone"} {
		if strings.Contains(root.Text, word) {
			t.Errorf("root %q carries the broadcast %s", root.Text, word)
		}
	}
	if !strings.Contains(root.Text, "why does the build fail?") {
		t.Errorf("root %q: want the question", root.Text)
	}
}
