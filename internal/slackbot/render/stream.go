package render

import (
	"strings"
	"unicode/utf16"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/mdscan"
)

// MaxStreamChars is what one streamed message holds: Slack's 12,000
// characters of Markdown, across all its appends.
const MaxStreamChars = maxMarkdownChars

// EmptyAnswer stands in for an answer with no text.
const EmptyAnswer = emptyAnswer

// maxTaskField is Slack's limit on a task card's title, details and output.
const maxTaskField = 256

// TaskField is s on one line within a task card field's limit, its
// mention tokens neutralised: a card's title is the model's arguments
// and its details a tool's summary, and neither may ping anyone.
func TaskField(s string) string {
	return clipText(Neutralize(oneLine(s)), maxTaskField)
}

// StreamEnd is what closes a streamed answer, under its text: the footer
// and the feedback buttons.
func StreamEnd(footer Footer, turnID string) []slack.Block {
	var blocks []slack.Block
	if ft := footer.text(); ft != "" {
		blocks = append(blocks, slack.NewContextBlock(FooterBlockID, mrkdwnObject(clipText(ft, maxTextObjectChars))))
	}
	return append(blocks, Feedback(turnID))
}

// StopMessage is the message that carries a running turn's Stop button
// where Slack's own stop control is not available; it is deleted when the
// turn ends.
func StopMessage(actionID, turnID string) Outgoing {
	btn := slack.NewButtonBlockElement(actionID, turnID,
		slack.NewTextBlockObject(slack.PlainTextType, "Stop", false, false)).WithStyle(slack.StyleDanger)
	return Outgoing{Text: "Working on it…", Blocks: []slack.Block{slack.NewActionBlock(StopBlockID, btn)}}
}

// StreamLen is the length of s as Slack's limits count it.
func StreamLen(s string) int { return textLen(s) }

// CutStream splits text appended to a message that has room characters
// left: head fits, at the last paragraph break in the second half of room,
// else the last line break, and tail goes on in the next message.
func CutStream(text string, room int) (head, tail string) {
	if textLen(text) <= room {
		return text, ""
	}
	end, n := 0, 0
	for i, r := range text {
		if n += max(utf16.RuneLen(r), 1); n > room {
			end = i
			break
		}
	}
	cut := text[:end]
	// A paragraph break early in the room would leave the message mostly
	// empty: past the middle, or a line break.
	if i := strings.LastIndex(cut, "\n\n"); i > len(cut)/2 {
		return text[:i+2], text[i+2:]
	}
	if i := strings.LastIndex(cut, "\n"); i > 0 {
		return text[:i+1], text[i+1:]
	}
	return cut, text[end:]
}

// CutStreamFenced is CutStream for a message whose text so far is before:
// when the cut falls inside a fenced code block, head closes it and tail
// opens it again with the same language, so that each message renders its
// code as code. What the fence lines add is within room.
func CutStreamFenced(before, text string, room int) (head, tail string) {
	head, tail = CutStream(text, room)
	if tail == "" {
		return head, tail
	}
	f, open := openFence(before + head)
	if !open {
		return head, tail
	}
	closeLine, openLine := reclose(&f), reopen(&f)
	head, tail = CutStream(text, room-textLen(closeLine)-1)
	if f, open = openFence(before + head); !open {
		return head, tail // the shorter cut is before the fence
	}
	closeLine, openLine = reclose(&f), reopen(&f)
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return head + closeLine, openLine + "\n" + tail
}

// openFence is the fenced code block md leaves open, if any.
func openFence(md string) (mdscan.Fence, bool) {
	var (
		f    mdscan.Fence
		open bool
	)
	for line := range strings.SplitSeq(md, "\n") {
		switch {
		case open && f.Closes(line):
			open = false
		case !open:
			f, open = mdscan.OpenFence(line)
		}
	}
	return f, open
}
