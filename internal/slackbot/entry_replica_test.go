package slackbot

import (
	"testing"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// Replicas: a command delivered to both processes is posted and answered
// once, and a panel thread opened on one is answered by the other from the
// channel in view.
func TestEntryPointsAcrossReplicas(t *testing.T) {
	p := newReplicaPair(t, readThenAnswer, func(name string, c *Config) {
		c.Repos = twoRepos(t)
		c.AllowChannels = []string{"C1", "C2"}
	})
	env, _ := p.a.slack.SendSlashCommand(slacktest.SlashCommand{User: "U1", Channel: "C1", Text: "what does this repo do?"})
	for _, conn := range []int{p.connA, p.connB} {
		if _, err := p.a.slack.RedeliverTo(conn, env, "timeout"); err != nil {
			t.Fatal(err)
		}
	}
	p.waitTurns(t, 1)
	roots := p.a.slack.Snapshot().BotMessages("C1", "", slacktest.DefaultBotID)
	if len(roots) != 1 {
		t.Fatalf("%d command roots, want 1", len(roots))
	}
	p.a.waitReaction("C1", roots[0].TS, reactDone)
	if n := len(answers(p.a.slack.Snapshot().BotMessages("C1", roots[0].TS, slacktest.DefaultBotID))); n != 1 {
		t.Errorf("%d answers to the command, want 1", n)
	}

	thread := p.a.slack.NextTS()
	p.send(t, p.connA, slacktest.AssistantThreadStarted("U1", "D1", thread, "C1"))
	p.a.waitPrompts(thread, 1)
	if _, err := p.a.slack.ReplyTo(p.connB, "D1", "U1", "where is billing handled?", thread); err != nil {
		t.Fatal(err)
	}
	p.waitTurns(t, 2)
	if got := p.a.lastRepo(); got != "payments" {
		t.Errorf("the panel question on the other replica was answered from %q, want payments", got)
	}
}
