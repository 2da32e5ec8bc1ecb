package render

import (
	"fmt"
	"strings"

	"github.com/slack-go/slack"
)

// CallState is where a tool call is in its life.
type CallState int

const (
	CallRunning CallState = iota
	CallOK
	CallFailed
)

// CallLine is one tool call as shown in the thread.
type CallLine struct {
	Name    string    // tool name
	Brief   string    // the call's arguments in short, as its tool gives them ("README.md:40-80")
	State   CallState // running, done or failed
	Summary string    // one-line result summary from the tool ("120 lines", "outside the workspace")
	URL     string    // optional link for the file the call names; empty = no link
}

// ProgressOptions shape a progress message.
type ProgressOptions struct {
	StopActionID string // action_id of the Stop button ("askrepo_stop"); empty = no button
	StopValue    string // value carried by the button (the turn id)
	Status       string // optional line above the calls, e.g. "Working…" or "⏳ Queued — 3 threads ahead"
}

// ProgressMessages renders tool calls as context lines, one context block per
// call, which reads best and keeps each call far from the 10-element limit of
// a context block. Usually that is one message; past the 50-block limit the
// calls continue in further messages. The Status line goes at the top of the
// first message and the Stop button (when StopActionID is set) at the bottom
// of the last, so a caller that spills into a new message must also update the
// previous one, which loses its button.
//
// The result is deterministic: rendering the same lines again gives the same
// messages, so the caller may re-render everything on each change and update
// the messages whose content changed.
func ProgressMessages(lines []CallLine, opts ProgressOptions) []Outgoing {
	status := strings.TrimSpace(opts.Status)
	stop := opts.StopActionID != ""
	var msgs []Outgoing
	var blocks []slack.Block
	var text []string
	start := func() {
		blocks, text = nil, nil
		if len(msgs) == 0 && status != "" {
			blocks = append(blocks, slack.NewContextBlock(StatusBlockID,
				mrkdwnObject(clipText(breakBroadcasts(mrkdwnEscaper.Replace(status)), maxTextObjectChars))))
			text = append(text, breakBroadcasts(mrkdwnEscaper.Replace(status)))
		}
	}
	finish := func() {
		if len(text) == 0 {
			text = []string{"Working…"}
		}
		msgs = append(msgs, Outgoing{Text: clipLines(strings.Join(text, "\n"), maxFallbackChars), Blocks: blocks})
	}
	// Every message keeps a slot for the button, only the last uses it, and
	// the slot is kept without a button too: a turn's final render (no
	// button) then splits its calls exactly as the running ones did, so the
	// final edit reaches every message that once carried the button.
	room := maxBlocksPerMessage - 1
	// The model chooses how many calls it makes; past maxProgressMessages
	// the rest are counted on one line instead of flooding the thread.
	shown, more := lines, ""
	if capacity := maxProgressMessages*room - min(len(status), 1); len(lines) > capacity {
		shown, more = lines[:capacity-1], moreCalls(lines[capacity-1:])
	}
	start()
	add := func(id, t string) {
		if len(blocks) == room {
			finish()
			start()
		}
		blocks = append(blocks, slack.NewContextBlock(id, mrkdwnObject(t)))
		text = append(text, t)
	}
	for i, l := range shown {
		add(fmt.Sprintf("askrepo_call_%d", i), callText(l))
	}
	if more != "" {
		add("askrepo_call_more", more)
	}
	if stop {
		btn := slack.NewButtonBlockElement(opts.StopActionID, opts.StopValue,
			slack.NewTextBlockObject(slack.PlainTextType, "Stop", false, false)).WithStyle(slack.StyleDanger)
		blocks = append(blocks, slack.NewActionBlock(StopBlockID, btn))
	}
	finish()
	return msgs
}

// maxProgressMessages bounds the messages one turn's tool calls take in
// the thread: about 200 calls, far more than a turn needs.
const maxProgressMessages = 4

// moreCalls is the line that stands for the calls past what the progress
// messages show: how many, and how they went.
func moreCalls(lines []CallLine) string {
	var ok, failed, running int
	for _, l := range lines {
		switch l.State {
		case CallOK:
			ok++
		case CallFailed:
			failed++
		default:
			running++
		}
	}
	word := "tool calls"
	if len(lines) == 1 {
		word = "tool call"
	}
	s := fmt.Sprintf("… and %d more %s: %d ✓, %d ✗", len(lines), word, ok, failed)
	if running > 0 {
		s += fmt.Sprintf(", %d ⏳", running)
	}
	return s
}

// callText is the mrkdwn of one call: "⏺ *read_file*  `README.md`  ✓ 120 lines".
// Every part the model or a tool wrote is escaped, so none of it can form a
// link or a mention.
func callText(l CallLine) string {
	var b strings.Builder
	b.WriteString("⏺ *")
	b.WriteString(mrkdwnEscaper.Replace(clipText(oneLine(strings.ReplaceAll(l.Name, "*", "")), maxToolChars)))
	b.WriteString("*")
	if args := clipText(oneLine(l.Brief), maxArgsChars); args != "" {
		b.WriteString("  ")
		if l.URL != "" {
			// A code span inside a link does not render as a link, so a
			// linked argument is shown as plain link text.
			b.WriteString("<" + linkURL(l.URL) + "|" + strings.ReplaceAll(mrkdwnEscaper.Replace(args), "|", "¦") + ">")
		} else {
			// A backtick would end the code span early; ˋ looks the same.
			b.WriteString("`" + mrkdwnEscaper.Replace(strings.ReplaceAll(args, "`", "ˋ")) + "`")
		}
	}
	summary := mrkdwnEscaper.Replace(clipText(oneLine(l.Summary), maxSummaryChars))
	switch l.State {
	case CallRunning:
		b.WriteString("  ⏳")
	case CallOK:
		b.WriteString("  ✓")
		if summary != "" {
			b.WriteString(" " + summary)
		}
	case CallFailed:
		if summary == "" {
			summary = "failed"
		}
		b.WriteString("  ✗ " + summary)
	}
	// The line is also the fallback text, which is not verbatim.
	return clipText(breakBroadcasts(b.String()), maxTextObjectChars)
}
