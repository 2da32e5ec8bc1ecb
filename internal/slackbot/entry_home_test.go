package slackbot

import (
	"context"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// openHome sends app_home_opened for user and waits for the nth publish.
func (h *harness) openHome(user string, n int) slacktest.View {
	h.t.Helper()
	h.slack.SendEvent(slacktest.AppHomeOpened(user, "D"+user))
	st, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool { return len(st.Views) >= n })
	if err != nil {
		h.t.Fatal(err)
	}
	return st.Views[n-1]
}

func TestHomeShowsReposThreadsAndUsage(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	root := h.mention("C1", "what does this repo do?", "")
	h.waitReaction("C1", root, reactDone)
	h.waitTurns(1)

	v := h.openHome("U1", 1)
	if v.Type != "home" || v.User != "U1" {
		t.Fatalf("published %s view for %q, want U1's home", v.Type, v.User)
	}
	text := v.AllText()
	link := "https://" + slacktest.DefaultTeamName + ".slack.com/archives/C1/p" + strings.ReplaceAll(root, ".", "") + "|what does this repo do?>"
	for _, want := range []string{"*" + testRepoName + "*", "ready", "commit `", "every channel I am in", link, "1 answer, 2,270 tokens", "/askrepo"} {
		if !strings.Contains(text, want) {
			t.Errorf("home %q lacks %q", text, want)
		}
	}

	// Opened again at once: not published again; the Messages tab is not the Home tab.
	h.slack.SendEvent(slacktest.AppHomeOpened("U1", "DU1"))
	h.slack.SendEvent(slacktest.AppHomeOpened("U3", "DU3").With("tab", "messages"))
	other := h.openHome("U2", 2)
	if other.User != "U2" || !strings.Contains(other.AllText(), "None yet") {
		t.Errorf("second publish is for %q (%q), want U2's with no threads", other.User, other.AllText())
	}
	if n := len(h.slack.Snapshot().Views); n != 2 {
		t.Errorf("%d views published, want 2 (U1 once, U2, not U3)", n)
	}
}

func TestHomeFailingRepoShowsItsStateNotItsError(t *testing.T) {
	good := gitexectest.Init(t, "")
	good.Commit(gitexectest.Commit{Message: "x", Write: map[string]string{"README.md": "x\n"}})
	m, err := repos.New(context.Background(), []repos.Spec{
		{Name: "good", Path: good.Dir, Channels: []string{repos.DirectMessages, "C1", "C7"}},
		{Name: "broken", URL: "file:///nonexistent/secret-host-path.git", Channels: []string{repos.DirectMessages}},
		{Name: "elsewhere", Path: good.Dir, Channels: []string{"C1"}},
	}, repos.Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	h := newHarness(t, harnessOpts{cfg: func(c *Config) {
		c.Repos = m
		c.AllowChannels = []string{"C1"}
		c.AllowUsers = []string{"U1"}
	}})
	text := h.openHome("U1", 1).AllText()
	for _, want := range []string{"*good*", "*broken*", "unavailable", "<#C1>", "DMs"} {
		if !strings.Contains(text, want) {
			t.Errorf("home %q lacks %q", text, want)
		}
	}
	for _, leak := range []string{"secret-host-path", "nonexistent", "<#C7>", "*elsewhere*"} {
		if strings.Contains(text, leak) {
			t.Errorf("home %q shows %q", text, leak)
		}
	}
	if text := h.openHome("U2", 2).AllText(); !strings.Contains(text, "not enabled for you") || strings.Contains(text, "good") {
		t.Errorf("home of a user not allowed: %q", text)
	}
}

// Every mrkdwn text of the Home tab is sent verbatim: without it Slack
// links channel names and parses mentions in text that repeats what
// people typed (a thread's question).
func TestHomeTextIsVerbatim(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	root := h.mention("C1", "what does @here and #general do?", "")
	h.waitReaction("C1", root, reactDone)
	h.waitTurns(1)
	v := h.openHome("U1", 1)
	n := 0
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if x["type"] == "mrkdwn" {
				n++
				if x["verbatim"] != true {
					t.Errorf("mrkdwn text %q is not verbatim", x["text"])
				}
			}
			for _, v := range x {
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(v.Raw)
	if n == 0 {
		t.Fatalf("no mrkdwn text in the Home tab %v", v.Raw)
	}
	if strings.Contains(v.AllText(), "@here") {
		t.Errorf("home %q carries a bare @here", v.AllText())
	}
}
