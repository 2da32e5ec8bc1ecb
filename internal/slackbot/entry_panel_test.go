package slackbot

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// twoRepos serves acme-widget in DMs and payments in C1 and C3; C2 has
// none. payments has a package, a configuration file and a directory its
// deny-list hides.
func twoRepos(t testing.TB) *repos.Manager {
	t.Helper()
	widget := gitexectest.Init(t, "")
	widget.Commit(gitexectest.Commit{Message: "widget", Write: map[string]string{"README.md": "# widget\n"}})
	pay := gitexectest.Init(t, "")
	pay.Commit(gitexectest.Commit{Message: "payments", Write: map[string]string{
		"README.md":         "# payments\n",
		"aaa-secrets/k.txt": "hunter2\n",
		"billing/pay.go":    "package billing\n",
		"config.yaml":       "retries: 3\n",
	}})
	m, err := repos.New(context.Background(), []repos.Spec{
		{Name: testRepoName, Path: widget.Dir, Channels: []string{repos.DirectMessages}},
		{Name: "payments", Path: pay.Dir, Channels: []string{"C1", "C3"}, Deny: []string{"aaa-secrets"}},
	}, repos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func panelHarness(t testing.TB, o harnessOpts) *harness {
	cfg := o.cfg
	o.cfg = func(c *Config) {
		c.Repos = twoRepos(t)
		c.AllowChannels = []string{"C1", "C2"}
		if cfg != nil {
			cfg(c)
		}
	}
	return newHarness(t, o)
}

// openPanel sends assistant_thread_started for a new thread of U1's panel
// in D1, viewed beside channel, and returns the thread's ts.
func (h *harness) openPanel(channel string) (thread, envelope string) {
	thread = h.slack.NextTS()
	return thread, h.slack.SendEvent(slacktest.AssistantThreadStarted("U1", "D1", thread, channel))
}

func (h *harness) waitPrompts(thread string, n int) []slacktest.Prompts {
	h.t.Helper()
	st, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		return len(threadPrompts(st, thread)) >= n
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return threadPrompts(st, thread)
}

func threadPrompts(st *slacktest.State, thread string) []slacktest.Prompts {
	var out []slacktest.Prompts
	for _, p := range st.Prompts {
		if p.ThreadTS == thread {
			out = append(out, p)
		}
	}
	return out
}

func promptText(p slacktest.Prompts) string {
	var b strings.Builder
	for _, pr := range p.Prompts {
		b.WriteString(pr.Title + " | " + pr.Message + "\n")
	}
	return b.String()
}

// modelRepo is the repository the model was told about in its first
// request of the last turn.
func (h *harness) lastRepo() string {
	reqs := h.ai.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		for _, m := range reqs[i].Chat.Messages {
			if _, after, ok := strings.Cut(m.Content, "repository: "); ok {
				name, _, _ := strings.Cut(after, "\n")
				return strings.TrimSpace(name)
			}
		}
	}
	return ""
}

func TestPanelGreetsAndAnswersFromTheChannelInView(t *testing.T) {
	h := panelHarness(t, harnessOpts{})
	thread, env := h.openPanel("C1")
	greet, err := h.slack.WaitMessages(h.ctx(), "D1", thread, 1)
	if err != nil {
		t.Fatal(err)
	}
	if g := greet[0].Text; !strings.Contains(g, "*payments*") || !strings.Contains(g, "<#C1>") {
		t.Errorf("greeting %q: want the repository of the channel in view", g)
	}
	ps := h.waitPrompts(thread, 1)[0]
	text := promptText(ps)
	if len(ps.Prompts) > 4 || !strings.Contains(text, "billing/") || !strings.Contains(text, "config.yaml") || !strings.Contains(text, "this week") {
		t.Errorf("prompts %q: want at most 4, from payments' package and config, and the week's changes", text)
	}
	if strings.Contains(text, "aaa-secrets") || strings.Contains(text, testRepoName) {
		t.Errorf("prompts %q name what the deny-list hides or a repository out of view", text)
	}

	// Redelivered: greeted once.
	if _, err := h.slack.Redeliver(env, "timeout"); err != nil {
		t.Fatal(err)
	}
	h.slack.Reply("D1", "U1", "where is billing handled?\nand why", thread)
	h.waitTurns(1)
	if n := len(h.slack.Snapshot().BotMessages("D1", thread, slacktest.DefaultBotID)); n < 2 {
		t.Fatalf("%d bot messages in the panel thread", n)
	}
	if got := h.lastRepo(); got != "payments" {
		t.Errorf("the panel question was answered from %q, want payments", got)
	}
	if n := len(threadPrompts(h.slack.Snapshot(), thread)); n != 1 {
		t.Errorf("prompts set %d times, want once despite the redelivery", n)
	}
	greets := 0
	for _, m := range h.slack.Snapshot().BotMessages("D1", thread, slacktest.DefaultBotID) {
		if strings.HasPrefix(m.Text, "Hi <@U1>") {
			greets++
		}
	}
	if greets != 1 {
		t.Errorf("%d greetings, want 1", greets)
	}
	titles := h.slack.Calls("assistant.threads.setTitle")
	if len(titles) != 1 || titles[0].Params.Get("title") != "where is billing handled?" {
		t.Errorf("setTitle calls %+v, want one with the first question's first line", titles)
	}

	// Bound now: a new channel in view changes nothing, and a question
	// about another repository is told the thread stays.
	h.slack.SendEvent(slacktest.AssistantThreadContextChanged("U1", "D1", thread, "C2"))
	h.slack.Reply("D1", "U1", "in "+testRepoName+": what is it?", thread)
	h.waitTurns(2)
	msgs := h.slack.Snapshot().BotMessages("D1", thread, slacktest.DefaultBotID)
	if last := msgs[len(msgs)-1].Text; !strings.Contains(last, "stays on payments") {
		t.Errorf("last reply %q: want the thread to stay on payments", last)
	}
	if n := len(threadPrompts(h.slack.Snapshot(), thread)); n != 1 {
		t.Errorf("prompts set %d times, want no new ones for a bound thread", n)
	}
	if n := len(h.slack.Calls("assistant.threads.setTitle")); n != 1 {
		t.Errorf("setTitle called %d times, want only for the first question", n)
	}
}

func TestPanelContextTheUserMayNotUse(t *testing.T) {
	tests := []struct {
		name, channel string
	}{
		{"a channel no repository serves", "C2"},
		{"a channel the allow-list leaves out", "C3"},
		{"no channel in view", ""},
	}
	h := panelHarness(t, harnessOpts{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			thread, _ := h.openPanel(tt.channel)
			greet, err := h.slack.WaitMessages(h.ctx(), "D1", thread, 1)
			if err != nil {
				t.Fatal(err)
			}
			if g := greet[0].Text; !strings.Contains(g, "*"+testRepoName+"*") || strings.Contains(g, "payments") {
				t.Errorf("greeting %q: want the DM's own repository", g)
			}
			if text := promptText(h.waitPrompts(thread, 1)[0]); strings.Contains(text, "payments") || strings.Contains(text, "billing") {
				t.Errorf("prompts %q are about a repository the context may not read", text)
			}
		})
	}
}

// A thread not bound yet follows the channel in view.
func TestPanelFollowsContextUntilBound(t *testing.T) {
	h := panelHarness(t, harnessOpts{})
	thread, _ := h.openPanel("C2")
	h.waitPrompts(thread, 1)
	h.slack.SendEvent(slacktest.AssistantThreadContextChanged("U1", "D1", thread, "C1"))
	ps := h.waitPrompts(thread, 2)
	if text := promptText(ps[1]); !strings.Contains(text, "payments") {
		t.Errorf("prompts after the change %q: want payments'", text)
	}
	h.slack.Reply("D1", "U1", "what is this?", thread)
	h.waitTurns(1)
	if got := h.lastRepo(); got != "payments" {
		t.Errorf("answered from %q, want payments", got)
	}
}

// The channel in view is recorded with the question: a restart between
// the question and the answer answers it from the same repository.
func TestPanelQuestionAnsweredAfterRestart(t *testing.T) {
	crash := newCrashAfterAck(false)
	h1 := panelHarness(t, harnessOpts{cfg: func(c *Config) { c.CrashAt = crash.at }})
	thread, _ := h1.openPanel("C1")
	h1.waitPrompts(thread, 1)
	crash.armed.Store(true)
	env := h1.slack.SendEvent(slacktest.UserMessage("D1", "im", "U1", "where is billing handled?", h1.slack.NextTS(), thread))
	crash.stop(h1, env)
	h2 := panelHarness(t, harnessOpts{slack: h1.slack, ai: h1.ai, store: h1.store})
	h2.waitTurns(1)
	if got := h2.lastRepo(); got != "payments" {
		t.Errorf("answered after the restart from %q, want payments", got)
	}
	if n := len(answers(h2.slack.Snapshot().BotMessages("D1", thread, slacktest.DefaultBotID))); n != 1 {
		t.Errorf("%d answers, want 1", n)
	}
}

// A panel thread is a session like any other across processes: the
// channel in view is kept in the greeting's metadata, so a process that
// did not see the thread open (a restart, another replica) answers it from
// the same repository, first question or follow-up.
func TestPanelContextSurvivesTheProcess(t *testing.T) {
	h1 := panelHarness(t, harnessOpts{})
	bound, _ := h1.openPanel("C1")
	h1.waitPrompts(bound, 1)
	h1.slack.Reply("D1", "U1", "where is billing handled?", bound)
	h1.waitTurns(1)
	fresh, _ := h1.openPanel("C2") // the DM's repository for now
	h1.waitPrompts(fresh, 1)
	if err := h1.stop(); err != nil {
		t.Fatal(err)
	}

	h2 := panelHarness(t, harnessOpts{slack: h1.slack, ai: h1.ai, store: h1.store})
	// The user moves on first: a bound thread stays where it is.
	h2.slack.SendEvent(slacktest.AssistantThreadContextChanged("U1", "D1", bound, "C2"))
	h2.slack.Reply("D1", "U1", "and the config?", bound)
	h2.waitTurns(1)
	if got := h2.lastRepo(); got != "payments" {
		t.Errorf("a follow-up after the restart was answered from %q, want payments", got)
	}
	msgs := h2.slack.Snapshot().BotMessages("D1", bound, slacktest.DefaultBotID)
	if last := msgs[len(msgs)-1]; len(answers([]slacktest.Message{last})) != 1 {
		t.Errorf("the follow-up got %q, want an answer", last.AllText())
	}

	// The thread opened beside C2 moves to C1 here: the greeting and the
	// prompts follow, and the first question is answered from payments.
	h2.slack.SendEvent(slacktest.AssistantThreadContextChanged("U1", "D1", fresh, "C1"))
	h2.waitPrompts(fresh, 2)
	greet, _ := h2.slack.Message("D1", h2.slack.Snapshot().BotMessages("D1", fresh, slacktest.DefaultBotID)[0].TS)
	if !strings.Contains(greet.Text, "*payments*") || greet.Metadata["event_payload"].(map[string]any)["channel"] != "C1" {
		t.Errorf("greeting after the change: %q, metadata %v", greet.Text, greet.Metadata)
	}
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
	h3 := panelHarness(t, harnessOpts{slack: h1.slack, ai: h1.ai, store: h1.store})
	h3.slack.Reply("D1", "U1", "what is this?", fresh)
	h3.waitTurns(1)
	if got := h3.lastRepo(); got != "payments" {
		t.Errorf("the first question in another process was answered from %q, want payments", got)
	}
	// Titled by the process that answered its first question; the bound
	// thread's follow-up in h2 titled nothing.
	calls, err := h3.slack.WaitCalls(h3.ctx(), "assistant.threads.setTitle", 2)
	if err != nil {
		t.Fatal(err)
	}
	var titled []string
	for _, c := range calls {
		titled = append(titled, c.Params.Get("thread_ts")+" "+c.Params.Get("title"))
	}
	if want := []string{bound + " where is billing handled?", fresh + " what is this?"}; !slices.Equal(titled, want) {
		t.Errorf("titles %q, want %q", titled, want)
	}
}

// A panel thread's turn has the Stop button like any other, clicked in
// the DM it runs in.
func TestPanelTurnStops(t *testing.T) {
	hold := newGate()
	t.Cleanup(hold.open)
	h := panelHarness(t, harnessOpts{script: heldAnswer(hold)})
	thread, _ := h.openPanel("C1")
	h.waitPrompts(thread, 1)
	h.slack.Reply("D1", "U1", "a long question", thread)
	waitQuestionAnswering(t, h, "a long question")
	st, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		return slices.ContainsFunc(st.BotMessages("D1", thread, slacktest.DefaultBotID), func(m slacktest.Message) bool { return stopValue(m) != "" })
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := st.BotMessages("D1", thread, slacktest.DefaultBotID)
	progress := msgs[slices.IndexFunc(msgs, func(m slacktest.Message) bool { return stopValue(m) != "" })]
	if _, err := h.slack.WaitAck(h.ctx(), h.slack.ClickButton(stopClick("U1", "D1", thread, progress))); err != nil {
		t.Fatal(err)
	}
	if lines := h.waitTurns(1); lines[0]["outcome"] != outcomeStopped {
		t.Errorf("panel turn outcome %v, want stopped", lines[0]["outcome"])
	}
}

// In a DM the command reads the DM's repositories: it answers from them
// and refuses one the DM may not read.
func TestCommandInADM(t *testing.T) {
	h := panelHarness(t, harnessOpts{})
	env, _ := h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "D1", Text: "in payments: how are refunds retried?"})
	ack, err := h.slack.WaitAck(h.ctx(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got := ackText(t, ack); !strings.Contains(got, `no repository called "payments"`) {
		t.Errorf("ack %q: want payments refused in a DM", got)
	}
	h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "D1", Text: "what is this?"})
	h.waitTurns(1)
	if got := h.lastRepo(); got != testRepoName {
		t.Errorf("a command in a DM was answered from %q, want %s", got, testRepoName)
	}
}
