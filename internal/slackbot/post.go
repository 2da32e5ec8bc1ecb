package slackbot

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/turn"
	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// refusedContent reports whether Slack refused a message for its content,
// which the same content sent again cannot pass.
func refusedContent(err error) bool {
	se, ok := errors.AsType[slack.SlackErrorResponse](err)
	return ok && slices.Contains([]string{"invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_blocks"}, se.Err)
}

// plainPart is an answer message reduced to its fallback text, which is
// mrkdwn within the limits of a message's text, with a note that says
// why it looks plain.
func plainPart(m render.Outgoing) render.Outgoing {
	return render.Outgoing{Text: m.Text + "\n_(Slack refused this part of the answer as formatted; it is shown as plain text.)_"}
}

// postAnswer posts the answer's messages after the first posted (those a
// cut-off turn posted before it was cut), recording each one's ts in the
// store as it goes out, so that a crash between two parts leaves the next
// start to post only the rest.
//
// thread is the thread's usage totals, this turn's included.
func (b *Bot) postAnswer(ctx context.Context, in inbound, answer string, co *checkout, res turnResult, thread llm.Usage, posted int, took time.Duration, log *slog.Logger) {
	msgs := render.AnswerMessages(answer, answerFooter(co, res, thread, took), answerHome(co)...)
	b.withFeedback(msgs, res.id)
	if posted > 0 {
		log.Info("posting the rest of an answer a restart cut off", "parts", len(msgs), "posted", posted)
	}
	for i, m := range msgs {
		if i < posted {
			continue
		}
		ts, err := b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, m)
		if refusedContent(err) && hasFeedback(m) {
			m, ts, err = b.postWithoutFeedback(ctx, in, m, err, log)
		}
		if refusedContent(err) {
			// Slack refused the blocks (a limit we do not know of, a
			// construct it will not render): the part goes out as its
			// plain-text form rather than not at all.
			log.Warn("Slack refused a part of the answer; posting it as plain text", "part", i, "err", err)
			ts, err = b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, plainPart(m))
		}
		if err != nil {
			log.Error("post to the thread", "part", i, "err", err)
			continue
		}
		if len(msgs) == 1 {
			continue // nothing to resume between
		}
		// Its own deadline: the part is out, and the record must not be
		// lost to the Slack context's end at a shutdown.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = b.cfg.Store.AddPart(sctx, res.id, i, ts)
		cancel()
		if err != nil {
			log.Warn("record a posted part of the answer; a restart before the end may post it again", "part", i, "err", err)
		}
		if i < len(msgs)-1 {
			b.crashAt(CrashBetweenParts)
		}
	}
}

// answerFooter is the footer under an answer. thread is the thread's
// usage totals, this turn's included.
func answerFooter(co *checkout, res turnResult, thread llm.Usage, took time.Duration) render.Footer {
	f := render.Footer{
		Steps:            res.steps,
		ToolCalls:        res.toolCalls,
		PromptTokens:     res.usage.PromptTokens,
		CachedTokens:     res.usage.CachedPromptTokens,
		CompletionTokens: res.usage.CompletionTokens,
		Duration:         took,
		Repo:             co.repo,
		Commit:           co.commit,
		Checkout:         strings.Join(co.notes, "; "),
	}
	// The thread's totals include this turn; show them once there was an
	// earlier turn, when they differ from this turn's numbers.
	if thread != res.usage {
		f.ThreadPromptTokens = thread.PromptTokens
		f.ThreadCachedTokens = thread.CachedPromptTokens
		f.ThreadCompletionTokens = thread.CompletionTokens
	}
	return f
}

// answerHome is the web view an answer's links may lead to without
// showing their host: the repository's.
func answerHome(co *checkout) []string {
	if co.lease.Web.Base != "" {
		return []string{co.lease.Web.Base}
	}
	return nil
}

func (b *Bot) postOut(ctx context.Context, in inbound, m render.Outgoing, log *slog.Logger) {
	if _, err := b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, m); err != nil {
		log.Error("post to the thread", "err", err)
	}
}

// cite is the answer as posted: with its citations checked at the turn's
// commit, or as written if the checkout could not be read (the log says
// why). The notes say what the citations cannot show, for the footer.
func (b *Bot) cite(c *checkout, out turn.Result) string {
	if out.CheckErr != nil {
		b.log.Warn("check an answer's citations; posting it unchecked", "repo", c.repo, "commit", c.commit, "err", out.CheckErr)
		return out.Answer
	}
	b.metrics.citations.WithLabelValues("valid").Add(float64(out.Checked.Valid))
	b.metrics.citations.WithLabelValues("flagged").Add(float64(out.Checked.Invalid))
	c.notes = out.Checked.Notes
	return out.Checked.Markdown
}
