package render

import (
	"strings"

	"github.com/slack-go/slack"
)

// Slack's limits for what we render. See
// https://docs.slack.dev/reference/block-kit/blocks and the chat.postMessage
// reference.
const (
	maxBlocksPerMessage = 50     // blocks in one message
	maxTextObjectChars  = 3000   // text of one mrkdwn/plain_text object
	maxMarkdownChars    = 12_000 // all markdown blocks of one message together
	// maxFallbackChars is Slack's advice for the top-level text ("limit ...
	// to 4,000 characters"); beyond 40,000 it truncates. With blocks present
	// the text is only the notification and screen-reader fallback, so the
	// advised size is plenty.
	maxFallbackChars = 4000

	maxArgsChars    = 80  // compact tool arguments on a context line
	maxSummaryChars = 300 // a tool's one-line result summary
	maxToolChars    = 80  // a tool name, should a model invent a long one
)

// Block IDs of the blocks the service may look for in interaction payloads.
const (
	StatusBlockID = "askrepo_status"
	StopBlockID   = "askrepo_stop"
	FooterBlockID = "askrepo_footer"
)

// Outgoing is one Slack message: blocks plus the plain-text fallback that
// notifications, screen readers and clients without blocks show. Text is
// mrkdwn, already escaped; the poster sends it as it is.
type Outgoing struct {
	Text   string
	Blocks []slack.Block
}

// oneLine collapses all whitespace, newlines included, to single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clipLines cuts s to at most limit characters at a line end, keeps a code
// fence balanced and ends with "…" when something was cut.
func clipLines(s string, limit int) string {
	if textLen(s) <= limit {
		return s
	}
	const reserve = len("\n```\n…")
	var kept []string
	n, fences := 0, 0
	for _, line := range strings.Split(s, "\n") {
		l := textLen(line) + 1
		if n+l > limit-reserve {
			if len(kept) == 0 {
				head, _ := cutText(line, limit-reserve)
				kept = append(kept, head)
			}
			break
		}
		kept = append(kept, line)
		n += l
		if line == "```" {
			fences++
		}
	}
	if fences%2 == 1 {
		kept = append(kept, "```")
	}
	return strings.Join(kept, "\n") + "\n…"
}

// mrkdwnObject is a mrkdwn text object that Slack shows as written. Left
// to itself (verbatim false) Slack parses a text object's mentions and
// links before showing it, so a bare "@channel" in a tool's summary or a
// file name could become a broadcast; the escaping done here is written
// for text Slack does not reinterpret.
func mrkdwnObject(text string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, text, false, true)
}
