package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/gitexec"
)

// maxAnswerMessages bounds the messages of one answer: 120,000 characters,
// several times what a question needs.
const maxAnswerMessages = 10

// Footer is the numbers shown under an answer.
type Footer struct {
	Steps, ToolCalls                                               int
	PromptTokens, CachedTokens, CompletionTokens                   int // this turn
	ThreadPromptTokens, ThreadCachedTokens, ThreadCompletionTokens int // running totals for the thread (0 = not shown)
	Duration                                                       time.Duration
	Repo, Commit                                                   string // optional; shown as "repo@abc1234" when set
	Note                                                           string // optional, e.g. "stopped after 25 steps"
	// Checkout is what to know about the checkout the citations were
	// checked in, e.g. "local commit abc1234 is not pushed; citations are
	// checked but not linked" (repos.Checked's notes).
	Checkout string
}

// text renders the footer as one mrkdwn line, e.g.
// "3 steps · 5 tool calls · 12.3k tokens in (9.1k cached) · 410 out · 8.2s".
// The notes come first because they change how the answer should be read.
func (f Footer) text() string {
	var parts []string
	for _, note := range []string{f.Note, f.Checkout} {
		if note = oneLine(note); note != "" {
			parts = append(parts, "_"+mrkdwnEscaper.Replace(note)+"_")
		}
	}
	if f.Steps > 0 {
		parts = append(parts, fmtPlural(f.Steps, "step", "steps"))
	}
	if f.ToolCalls > 0 {
		parts = append(parts, fmtPlural(f.ToolCalls, "tool call", "tool calls"))
	}
	if f.PromptTokens > 0 || f.CompletionTokens > 0 {
		parts = append(parts, tokensIn(f.PromptTokens, f.CachedTokens, "tokens in"), fmtCount(f.CompletionTokens)+" out")
	}
	if f.Duration > 0 {
		parts = append(parts, fmtDuration(f.Duration))
	}
	if f.ThreadPromptTokens > 0 || f.ThreadCompletionTokens > 0 {
		parts = append(parts, "thread: "+tokensIn(f.ThreadPromptTokens, f.ThreadCachedTokens, "in")+", "+fmtCount(f.ThreadCompletionTokens)+" out")
	}
	if repo := repoAt(f.Repo, f.Commit); repo != "" {
		parts = append(parts, mrkdwnEscaper.Replace(repo))
	}
	return breakBroadcasts(strings.Join(parts, " · "))
}

func tokensIn(prompt, cached int, label string) string {
	s := fmtCount(prompt) + " " + label
	if cached > 0 {
		s += " (" + fmtCount(cached) + " cached)"
	}
	return s
}

func fmtPlural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// fmtCount prints token counts the way people skim them: 410, 12.3k, 1.2M.
func fmtCount(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n < 1_000_000:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64), ".0") + "k"
	default:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64), ".0") + "M"
	}
}

func fmtDuration(d time.Duration) string {
	if d < time.Minute {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

func repoAt(repo, commit string) string {
	repo, commit = strings.TrimSpace(repo), gitexec.ShortCommit(strings.TrimSpace(commit))
	switch {
	case repo != "" && commit != "":
		return repo + "@" + commit
	case repo != "":
		return repo
	default:
		return commit
	}
}

// AnswerMarkdown is the answer's Markdown as Slack is sent it, before it
// is cut into messages: mention tokens neutralised and the hosts of links
// that leave the home web views shown. A streamed answer renders each
// verified prefix through it, so that what streams is what the message UI
// would post.
func AnswerMarkdown(markdown string, home ...string) string {
	md := Neutralize(strings.Trim(strings.ReplaceAll(markdown, "\r\n", "\n"), "\n"))
	return showLinkHosts(md, home)
}

// emptyAnswer stands in for an answer with no text: Slack rejects an empty
// markdown block, and the reader should know the model said nothing.
const emptyAnswer = "_(The model returned no answer text.)_"

// AnswerMessages renders the model's answer, with the footer under its last
// part.
//
// The answer goes into Slack's markdown block rather than being converted to
// mrkdwn in section blocks. The markdown block takes standard Markdown, the
// dialect models write, and Slack renders it itself: headings, nested lists,
// tables as tables, code fences with syntax highlighting, links. A mrkdwn
// conversion can only approximate those (no headings, no tables, no
// languages) and would have to be kept right by us. Its cost is a limit of
// 12,000 characters across the markdown blocks of one message, so a longer
// answer is cut at paragraph and code-fence boundaries into several messages;
// a code block longer than a message is closed at the cut and reopened with
// the same language in the next. The mrkdwn conversion is still used for each
// message's fallback Text, the only form notifications show.
//
// Mention tokens the model wrote are neutralised first (see Neutralize),
// and every link that leaves the home web views (the repository's, given
// as base URLs) shows its host (see showLinkHosts).
func AnswerMessages(markdown string, footer Footer, home ...string) []Outgoing {
	md := AnswerMarkdown(markdown, home...)
	if strings.TrimSpace(md) == "" {
		md = emptyAnswer
	}
	chunks := splitMarkdown(md, maxMarkdownChars)
	if len(chunks) > maxAnswerMessages {
		// The model chooses how long it writes; past this a thread is
		// flooded, not answered. What is left out is said, with its size.
		left := 0
		for _, c := range chunks[maxAnswerMessages:] {
			left += textLen(c)
		}
		chunks = chunks[:maxAnswerMessages]
		cut := fmt.Sprintf("the answer is cut here: %d more characters are not shown", left)
		footer.Note = strings.Join(slices.DeleteFunc([]string{footer.Note, cut}, func(s string) bool { return s == "" }), "; ")
	}
	msgs := make([]Outgoing, 0, len(chunks))
	for i, c := range chunks {
		m := Outgoing{
			Text:   clipLines(toMrkdwn(c), maxFallbackChars),
			Blocks: []slack.Block{slack.NewMarkdownBlock("", c)},
		}
		if i == len(chunks)-1 {
			if ft := footer.text(); ft != "" {
				m.Blocks = append(m.Blocks, slack.NewContextBlock(FooterBlockID,
					mrkdwnObject(clipText(ft, maxTextObjectChars))))
			}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// ErrorMessage is what the user sees when a turn fails: one sentence that is
// safe to show, and a reference under which the full error was logged.
func ErrorMessage(sentence, ref string) Outgoing {
	s := breakBroadcasts(mrkdwnEscaper.Replace(clipText(oneLine(sentence), maxTextObjectChars-100)))
	if s == "" {
		s = "Something went wrong."
	}
	text := ":warning: " + s
	block := text
	if ref = mrkdwnEscaper.Replace(oneLine(ref)); ref != "" {
		text += " (ref: " + ref + ")"
		block += " _(ref: `" + strings.ReplaceAll(ref, "`", "") + "`)_"
	}
	return Outgoing{
		Text:   text,
		Blocks: []slack.Block{slack.NewSectionBlock(mrkdwnObject(block), nil, nil)},
	}
}
