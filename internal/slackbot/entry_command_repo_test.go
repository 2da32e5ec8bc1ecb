package slackbot

import (
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// /askrepo in REPO: picks a repository the channel may read, as a mention
// does; one it may not read (bound to DMs only) is refused to the asker
// alone, before anything is posted or read.
func TestCommandInRepoFollowsTheChannelsRepositories(t *testing.T) {
	h := panelHarness(t, harnessOpts{})
	env, _ := h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "in " + testRepoName + ": what is it?"})
	ack, err := h.slack.WaitAck(h.ctx(), env)
	if err != nil {
		t.Fatal(err)
	}
	// The same sentence as for a name that does not exist: the channel
	// learns nothing of repositories it may not read.
	if got := ackText(t, ack); !strings.Contains(got, `no repository called "`+testRepoName+`"`) {
		t.Errorf("ack for a repository C1 may not read: %q, want it refused as unknown here", got)
	}
	if n := len(h.slack.Messages()); n != 0 || len(h.ai.Requests()) != 0 {
		t.Fatalf("after the refusal: %d messages, %d model requests; want none", n, len(h.ai.Requests()))
	}

	h.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "in payments: where is billing?"})
	root := h.commandRoot("C1")
	h.waitReaction("C1", root.TS, reactDone)
	if got := h.lastRepo(); got != "payments" {
		t.Errorf("answered from %q, want payments", got)
	}
	if got := answers(h.slack.Snapshot().BotMessages("C1", root.TS, slacktest.DefaultBotID)); len(got) != 1 {
		t.Errorf("%d answers in the command's thread, want 1", len(got))
	}
}
