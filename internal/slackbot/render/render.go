package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	Args    string    // raw JSON arguments from the model (may be invalid JSON)
	State   CallState // running, done or failed
	Summary string    // one-line result summary from the tool ("120 lines", "outside the workspace")
	URL     string    // optional link for the file the call names; empty = no link
}

// Outgoing is one Slack message: blocks plus the plain-text fallback that
// notifications, screen readers and clients without blocks show. Text is
// mrkdwn, already escaped; the poster sends it as it is.
type Outgoing struct {
	Text   string
	Blocks []slack.Block
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

// maxAnswerMessages bounds the messages of one answer: 120,000 characters,
// several times what a question needs.
const maxAnswerMessages = 10

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
	if args := CompactArgs(l.Name, l.Args); args != "" {
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
	repo, commit = strings.TrimSpace(repo), strings.TrimSpace(commit)
	if len(commit) > 7 {
		commit = commit[:7]
	}
	switch {
	case repo != "" && commit != "":
		return repo + "@" + commit
	case repo != "":
		return repo
	default:
		return commit
	}
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
	md := Neutralize(strings.Trim(strings.ReplaceAll(markdown, "\r\n", "\n"), "\n"))
	md = showLinkHosts(md, home)
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

// Argument keys CompactArgs recognises, most specific first. Tools name the
// same idea differently; these cover ours and the common spellings models
// fall back to.
var (
	pathArgKeys    = []string{"path", "file_path", "file", "filename", "dir", "directory"}
	patternArgKeys = []string{"pattern", "query", "regex", "search"}
	includeArgKeys = []string{"include", "glob", "file_pattern", "files"}
)

// CompactArgs shows a call's arguments the way a person would write them:
// "README.md", "README.md:40-79" (offset 40, limit 40), "\"retry\" in
// internal/ (*.go)", "cmd/ (recursive)". Keys it does not know follow as
// key=value pairs, and arguments that are not a JSON object are shown raw,
// since a model's broken JSON is worth seeing. The result is at most about 80
// characters. Flags set to true show as their name alone.
func CompactArgs(toolName, argsJSON string) string {
	raw := strings.TrimSpace(argsJSON)
	var obj map[string]any
	if raw != "" {
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil || dec.More() || obj == nil && raw != "null" {
			return clipText(oneLine(raw), maxArgsChars)
		}
	}
	str := func(keys []string) string {
		for _, k := range keys {
			if v, ok := obj[k].(string); ok && strings.TrimSpace(v) != "" {
				delete(obj, k)
				return oneLine(v)
			}
		}
		return ""
	}
	num := func(keys ...string) (int64, bool) {
		for _, k := range keys {
			if v, ok := obj[k].(json.Number); ok {
				if n, err := v.Int64(); err == nil {
					delete(obj, k)
					return n, true
				}
			}
		}
		return 0, false
	}

	var b strings.Builder
	pattern, path, include := str(patternArgKeys), str(pathArgKeys), str(includeArgKeys)
	switch {
	case pattern != "":
		b.WriteString(`"` + pattern + `"`)
		if path != "" {
			b.WriteString(" in " + path)
		}
	case path != "":
		b.WriteString(path)
	case strings.HasPrefix(toolName, "list"):
		b.WriteString(".") // listing with no path lists the checkout root
	}
	if path != "" && pattern == "" {
		// read_file's offset is 1-based and limit counts lines.
		offset, hasOffset := num("offset", "start_line", "line")
		if limit, ok := num("limit"); ok && limit > 0 {
			first := max(offset, 1)
			fmt.Fprintf(&b, ":%d-%d", first, first+limit-1)
		} else if end, ok := num("end_line"); ok {
			fmt.Fprintf(&b, ":%d-%d", max(offset, 1), end)
		} else if hasOffset {
			fmt.Fprintf(&b, ":%d-", offset)
		}
	}
	if include != "" {
		b.WriteString(" (" + include + ")")
	}
	if r, ok := obj["recursive"].(bool); ok {
		delete(obj, "recursive")
		if r {
			b.WriteString(" (recursive)")
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := obj[k]
		if f, ok := v.(bool); ok && !f {
			continue // flags are off unless given; "literal=false" is noise
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		if _, ok := v.(bool); ok {
			b.WriteString(k) // a flag that is on: "ignore_case"
			continue
		}
		b.WriteString(k + "=" + argValue(v))
	}
	return clipText(b.String(), maxArgsChars)
}

// argValue prints one argument value: strings bare unless they hold spaces,
// anything else as compact JSON.
func argValue(v any) string {
	if s, ok := v.(string); ok {
		s = oneLine(s)
		if s == "" || strings.ContainsAny(s, " =") {
			return strconv.Quote(s)
		}
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(buf.String())
}
