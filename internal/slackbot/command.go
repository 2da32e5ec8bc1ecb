package slackbot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
)

// commandHelp is what "/askrepo help" (or "/askrepo" alone) answers.
const commandHelp = "*Ask me about the code.* I answer in a thread that everyone in the channel sees.\n" +
	"• `/askrepo where is the retry policy configured?`\n" +
	"• `/askrepo in payments: how are refunds retried?` picks one of the repositories this channel can read\n" +
	"• `/askrepo repos` lists them\n" +
	"• or mention me in a channel, write to me in a DM or in my assistant panel, or use \"Ask askrepo about this\" on a message."

// onCommand handles a slash_commands envelope. Slack shows the asker an
// error unless the ack comes within 3 s, so everything that needs no
// repository (help, the list, a refusal) is the ack's own ephemeral reply,
// and a question is recorded in the inbox, acked, and left to the intake,
// which posts it as a new thread's root and answers it there.
func (b *Bot) onCommand(ctx context.Context, sm *socketmode.Client, evt socketmode.Event, received time.Time) {
	cmd, _ := evt.Data.(slack.SlashCommand)
	reply, qe, keep := b.command(ctx, cmd)
	if evt.Request != nil {
		var payload any
		if reply != "" {
			payload = map[string]string{"response_type": "ephemeral", "text": reply}
		}
		b.ackWith(ctx, sm, evt.Request.EnvelopeID, received, payload)
	}
	if keep {
		b.crashAt(CrashAfterAck)
		b.intake.push(qe)
	}
}

// command decides what a slash command gets: an ephemeral reply, or a
// question for the intake (recorded in the inbox under its trigger_id,
// which a redelivery shares and no other invocation does).
func (b *Bot) command(ctx context.Context, cmd slack.SlashCommand) (reply string, qe queuedEvent, keep bool) {
	team := cmd.TeamID
	if team == "" {
		team = b.self.TeamID
	}
	text := strings.TrimSpace(cmd.Text)
	in := inbound{
		Key:   session.Key{Team: team, Channel: cmd.ChannelID},
		User:  cmd.UserID,
		Text:  text,
		IM:    strings.HasPrefix(cmd.ChannelID, "D"),
		entry: entry{Via: viaCommand, Pending: true, ResponseURL: cmd.ResponseURL},
	}
	switch strings.ToLower(text) {
	case "", "help":
		return commandHelp, qe, false
	}
	if !b.allowed(in) || !b.repoEnabled(in) {
		b.metrics.refused.Inc()
		b.log.Info("command refused: not enabled for this channel or user", "channel", cmd.ChannelID, "user", cmd.UserID)
		return noteNotEnabled, qe, false
	}
	if strings.EqualFold(text, "repos") {
		return reposReply(b.cfg.Repos.ForChannel(in.repoChannel())), qe, false
	}
	// The choice of repository is checked now, so a wrong one is told to
	// the asker alone and nothing is posted.
	repo, question, err := b.cfg.Repos.Resolve(in.repoChannel(), text)
	var unknown *repos.UnknownRepoError
	switch {
	case errors.As(err, &unknown):
		return sentence(err.Error()), qe, false
	case err != nil:
		return noteNotEnabled, qe, false
	case question == "":
		return fmt.Sprintf("Ask me a question about %s after \"in %s:\".", repo, repo), qe, false
	}
	qe, keep = b.record(ctx, in, "cmd:"+team+":"+cmd.TriggerID, viaCommand, 0)
	return "", qe, keep
}

// checkChoice checks the repository a command's or shortcut's question
// names (or the channel's default) before anything is posted, so a wrong
// one is told to the asker alone; "" when it may be asked.
func (b *Bot) checkChoice(in inbound, question string) string {
	repo, rest, err := b.cfg.Repos.Resolve(in.repoChannel(), question)
	var unknown *repos.UnknownRepoError
	switch {
	case errors.As(err, &unknown):
		return sentence(err.Error())
	case err != nil:
		return noteNotEnabled
	case rest == "":
		return fmt.Sprintf("Ask me a question about %s after \"in %s:\".", repo, repo)
	}
	return ""
}

// reposReply lists the repositories a channel can read, its default first.
func reposReply(names []string) string {
	if len(names) == 1 {
		return fmt.Sprintf("Questions here are about *%s*.", names[0])
	}
	return fmt.Sprintf("Questions here are about *%s* unless they start with `in NAME:`, one of: %s.", names[0], strings.Join(names, ", "))
}
