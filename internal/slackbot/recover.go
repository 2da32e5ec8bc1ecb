package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/turn"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// What a thread is told about a turn a restart cut off. One sentence each.
const (
	noteResuming      = "My answer to this was interrupted by a restart; I am picking it up where I left off."
	noteRerunning     = "My answer to this was interrupted by a restart; I am starting it over."
	noteAskAgain      = "My answer to this was interrupted by a restart; please ask again."
	noteWillResume    = "I am restarting; I will pick this up when I am back."
	noteNotStartedRe  = "I am restarting before I could get back to this; I will pick it up when I am back."
	noteNotStartedNew = "I am restarting before I could get to this; I will answer it when I am back."
)

// recovery is what a job carries when it finishes a turn that a crash or a
// shutdown cut off, instead of answering a new message.
type recovery struct {
	turn session.Turn // the cut-off turn as the store has it
	mode string       // RecoverResume, RecoverRerun or RecoverReport
}

// recoverTurns queues the turns a crash or a shutdown left unfinished.
// It runs before the first event is read, so each is first in its thread's
// queue and the thread keeps its order. Nothing is claimed here: the job
// claims its turn when it runs (see claim), so a job that never runs (a
// shutdown first) leaves the turn for the next start.
//
// A turn started after boot is not this start's to recover: some other
// process, running alongside on the same store, started it and is working on
// it (two processes started at once after a crash race for the same turn;
// the first one's claim starts a new turn, which the second must not take
// over). Store and process clocks are the same host's for SQLite. What this
// cannot tell apart is a turn another live process began before this boot
// and one a crash cut: two processes must not serve from one SQLite store
// at once (bot serve waits for the one before it to stop).
//
// A thread normally has at most one unfinished turn (its turns run one at a
// time); if it has more, only the newest is continued and the older ones
// are reported, since the history has moved past their questions.
func (b *Bot) recoverTurns(ctx context.Context, boot time.Time) {
	turns, err := b.cfg.Store.Unfinished(ctx)
	if err != nil {
		b.log.Error("list turns a restart cut off; they stay for the next start", "err", err)
		return
	}
	turns = slices.DeleteFunc(turns, func(t session.Turn) bool {
		if t.Key.Team == session.MCPTeam {
			return true // an MCP ask: its caller went with the process
		}
		if t.Started.After(boot) {
			b.log.Info("unfinished turn started after this process: left to the process running it", "turn", t.ID, "thread", t.Key.String())
			return true
		}
		return false
	})
	if len(turns) == 0 {
		return
	}
	newest := make(map[session.Key]string, len(turns))
	for _, t := range turns { // oldest first
		newest[t.Key] = t.ID
	}
	b.log.Info("recovering turns a restart cut off", "count", len(turns), "mode", b.cfg.Recovery)
	for _, t := range turns {
		mode := b.cfg.Recovery
		if newest[t.Key] != t.ID {
			mode = RecoverReport
		}
		in := inbound{Key: t.Key, User: t.User, TS: t.MsgTS, Text: t.Question}
		b.queue.enqueue(&job{in: in, arrived: time.Now(), recovered: &recovery{turn: t, mode: mode}})
	}
}

// claim takes a recovered job's turn for this process, or reports false if
// there is nothing to do: another process claimed it, or it is only
// reported. (announceRecovery then finds whether its answer is already in
// the thread.) It is the guard against
// answering twice: the store lets exactly one ContinueTurn (or EndTurn) of a
// turn succeed, so two starts, or a start after a crash during recovery,
// cannot both answer.
func (b *Bot) claim(ctx context.Context, j *job, turnID string, log *slog.Logger) bool {
	rc := j.recovered
	old := rc.turn
	if rc.mode == RecoverReport {
		ref := newID(3)
		if err := b.cfg.Store.EndTurn(ctx, old.ID, session.TurnFailed, ref); err != nil {
			b.lostClaim(err, log)
			return false
		}
		b.postOut(ctx, j.in, render.Outgoing{Text: noteAskAgain}, log)
		b.react(ctx, j.in, reactFailed)
		b.metrics.turns.WithLabelValues(outcomeReported).Inc()
		log.Info("turn", "user", j.in.User, "outcome", outcomeReported, "ref", ref)
		return false
	}
	if err := b.cfg.Store.ContinueTurn(ctx, old.ID, session.Turn{ID: turnID}); err != nil {
		b.lostClaim(err, log)
		return false
	}
	return true
}

// announceRecovery gives the note that tells the thread a claimed turn
// goes on, or reports false when there is nothing more to do: its answer,
// stored before the cut, is already in the thread. loaded is the session read
// after the claim (err, if that failed: the turn fails with it next).
func (b *Bot) announceRecovery(ctx context.Context, j *job, turnID string, loaded turn.Loaded, err error, log *slog.Logger) (note string, goOn bool) {
	if err != nil {
		log.Warn("load a recovered turn's session", "err", err)
	}
	if turn.EndsWithAnswer(loaded.Session.History) {
		// The crash came after the answer was stored: it may have been
		// posted too, before the turn could be ended.
		posted, err := b.answerPosted(ctx, j.in)
		switch {
		case err != nil:
			log.Warn("could not check the thread for an answer already posted; posting it", "err", err)
		case posted:
			if err := b.cfg.Store.EndTurn(ctx, turnID, session.TurnDone, ""); err != nil {
				log.Error("record the end of a turn", "err", err)
			}
			b.metrics.turns.WithLabelValues(outcomeAlreadyPosted).Inc()
			log.Info("turn", "user", j.in.User, "outcome", outcomeAlreadyPosted)
			return "", false
		}
		return "", true // the answer goes out without a request, as if never cut
	}
	note = noteResuming
	if j.recovered.mode == RecoverRerun {
		note = noteRerunning
	}
	return note, true
}

func (b *Bot) lostClaim(err error, log *slog.Logger) {
	if errors.Is(err, session.ErrTurnEnded) {
		log.Info("a cut-off turn was already taken over, by another start", "err", err)
		return
	}
	log.Error("claim a cut-off turn; it stays for the next start", "err", err)
}

// answerPosted reports whether the thread already shows the bot's answer to
// the question in: a message of the bot after it carrying the answer footer,
// which is in the last message of an answer. It needs the history scopes the
// bot has for follow-ups.
func (b *Bot) answerPosted(ctx context.Context, in inbound) (bool, error) {
	params := &slack.GetConversationRepliesParameters{ChannelID: in.Key.Channel, Timestamp: in.Key.Thread, Oldest: in.TS, Limit: 200}
	for range 20 {
		msgs, more, cursor, err := b.api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return false, fmt.Errorf("read the thread with conversations.replies: %w", err)
		}
		for _, m := range msgs {
			mine := (m.BotID != "" && m.BotID == b.self.BotID) || (m.User != "" && m.User == b.self.UserID)
			if !mine || !tsAfter(m.Timestamp, in.TS) {
				continue
			}
			for _, bl := range m.Blocks.BlockSet {
				if bl.ID() == render.FooterBlockID {
					return true, nil
				}
			}
		}
		if !more || cursor == "" {
			return false, nil
		}
		params.Cursor = cursor
	}
	return false, nil
}

// tsAfter compares Slack timestamps ("seconds.micros").
func tsAfter(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	ai, _ := strconv.ParseInt(as, 10, 64)
	bi, _ := strconv.ParseInt(bs, 10, 64)
	if ai != bi {
		return ai > bi
	}
	af, bf = (af + "000000")[:6], (bf + "000000")[:6]
	return af > bf
}
