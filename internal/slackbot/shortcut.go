package slackbot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/askrepo/askrepo/internal/session"
)

// The message shortcut "Ask askrepo about this": a modal with the message
// quoted and a question, answered in the message's thread with the message
// as context.

// callback_ids of the shortcut (as the app manifest declares it) and of
// its modal; interactions with any other are not ours to take.
const (
	shortcutCallback = "askrepo_ask"
	modalCallback    = "askrepo_ask_modal"
	// The modal's question input: block_id and action_id.
	questionBlock  = "question"
	questionAction = "question"
)

const defaultShortcutQuestion = "What does this mean and where does it come from?"

// maxQuote bounds the message text carried in the modal's private_metadata
// (3,000 characters in all) and shown in it.
const maxQuote = 2400

// shortcutTarget is the message a modal asks about, kept in the modal's
// private_metadata, which Slack stores and returns on submit.
type shortcutTarget struct {
	Channel string `json:"c"`
	TS      string `json:"ts"`
	Thread  string `json:"th,omitempty"`
	Quote   string `json:"q"`
	// Reply is the shortcut's response_url, to tell the asker alone if
	// the question cannot be posted.
	Reply string `json:"r,omitempty"`
	// User is who the modal was opened for, the only one who may submit
	// it ("" in a modal opened before it was kept).
	User string `json:"u,omitempty"`
}

// maxMetadata is Slack's limit on a view's private_metadata, in characters.
const maxMetadata = 3000

// encode is t as private_metadata: its quote cut further when the
// encoded form (line breaks and quotes escaped) would not fit, since
// Slack refuses the whole modal then.
func (t shortcutTarget) encode() (string, error) {
	for {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(t); err != nil {
			return "", err
		}
		meta := strings.TrimSuffix(buf.String(), "\n")
		over := utf8.RuneCountInString(meta) - maxMetadata
		if over <= 0 || t.Quote == "" {
			return meta, nil
		}
		q := []rune(strings.TrimSuffix(t.Quote, "…"))
		t.Quote = string(q[:max(0, len(q)-over-1)]) + "…"
	}
}

// onShortcut takes the shortcut's message_action and its modal's
// view_submission, acking them itself, and reports whether it did; every
// other interaction is left to the caller.
func (b *Bot) onShortcut(ctx context.Context, sm *socketmode.Client, evt socketmode.Event, received time.Time) bool {
	cb, ok := evt.Data.(slack.InteractionCallback)
	if !ok || evt.Request == nil {
		return false
	}
	switch {
	case cb.Type == slack.InteractionTypeMessageAction && cb.CallbackID == shortcutCallback:
		b.ack(ctx, sm, evt.Request.EnvelopeID, received)
		b.background(func(ctx context.Context) { b.openAsk(ctx, cb) })
	case cb.Type == slack.InteractionTypeViewSubmission && cb.View.CallbackID == modalCallback:
		reply, qe, keep := b.submitAsk(ctx, cb)
		var payload any
		if reply != "" {
			payload = slack.NewErrorsViewSubmissionResponse(map[string]string{questionBlock: reply})
		}
		b.ackWith(ctx, sm, evt.Request.EnvelopeID, received, payload)
		if keep {
			b.crashAt(CrashAfterAck)
			b.intake.push(qe)
		}
	default:
		return false
	}
	return true
}

// openAsk opens the modal for a message, or tells the user alone, through
// the response_url, that the bot does not answer in its channel.
func (b *Bot) openAsk(ctx context.Context, cb slack.InteractionCallback) {
	in := inbound{Key: session.Key{Channel: cb.Channel.ID}, User: cb.User.ID, IM: strings.HasPrefix(cb.Channel.ID, "D")}
	in.ResponseURL = cb.ResponseURL
	if !b.allowed(in) || !b.repoEnabled(in) {
		b.metrics.refused.Inc()
		b.log.Info("shortcut refused: not enabled for this channel or user", "channel", cb.Channel.ID, "user", cb.User.ID)
		b.tellAsker(ctx, in, noteNotEnabled)
		return
	}
	text := cb.Message.Text
	if utf8.RuneCountInString(text) > maxQuote {
		text = string([]rune(text)[:maxQuote]) + "…"
	}
	meta, err := shortcutTarget{Channel: cb.Channel.ID, TS: cb.Message.Timestamp, Thread: cb.Message.ThreadTimestamp,
		Quote: text, Reply: cb.ResponseURL, User: cb.User.ID}.encode()
	if err != nil {
		b.log.Error("encode a shortcut's message", "err", err)
		return
	}
	input := slack.NewPlainTextInputBlockElement(nil, questionAction)
	input.Multiline, input.InitialValue = true, defaultShortcutQuestion
	shown := quote(text)
	if strings.TrimSpace(text) == "" {
		shown = "_(the message has no text)_"
	}
	view := slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      modalCallback,
		PrivateMetadata: meta,
		Title:           slack.NewTextBlockObject(slack.PlainTextType, "Ask askrepo", false, false),
		Submit:          slack.NewTextBlockObject(slack.PlainTextType, "Ask", false, false),
		Close:           slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, shown, false, true), nil, nil),
			slack.NewInputBlock(questionBlock, slack.NewTextBlockObject(slack.PlainTextType, "Your question", false, false), nil, input),
		}},
	}
	_, err = b.api.OpenViewContext(ctx, cb.TriggerID, view)
	b.cosmetic("views.open", err)
}

// submitAsk checks a submitted question as a command's is checked, and
// records it in the inbox under the view's ID, which a redelivery shares.
// A reply is shown in the modal, under the question, and nothing is read.
func (b *Bot) submitAsk(ctx context.Context, cb slack.InteractionCallback) (reply string, qe queuedEvent, keep bool) {
	var t shortcutTarget
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &t); err != nil || t.Channel == "" || t.TS == "" {
		b.log.Warn("a shortcut's modal came back without its message", "view", cb.View.ID, "err", err)
		return "This form has expired; please use the shortcut on the message again.", qe, false
	}
	if t.User != "" && t.User != cb.User.ID {
		b.log.Warn("a shortcut's modal submitted by another user than it was opened for", "view", cb.View.ID, "user", cb.User.ID)
		return "This form was opened by someone else; use the shortcut on the message yourself.", qe, false
	}
	team := cb.Team.ID
	if team == "" {
		team = b.self.TeamID
	}
	question := strings.TrimSpace(cb.View.State.Values[questionBlock][questionAction].Value)
	in := inbound{
		Key:   session.Key{Team: team, Channel: t.Channel, Thread: threadRoot(t.Thread, t.TS)},
		User:  cb.User.ID,
		Text:  question + shortcutContext(t.Quote),
		IM:    strings.HasPrefix(t.Channel, "D"),
		entry: entry{Via: viaShortcut, Pending: true, Shown: question, ResponseURL: t.Reply},
	}
	if !b.allowed(in) || !b.repoEnabled(in) {
		b.metrics.refused.Inc()
		return noteNotEnabled, qe, false
	}
	if why := b.checkChoice(in, question); why != "" {
		return why, qe, false
	}
	qe, keep = b.record(ctx, in, "view:"+team+":"+cb.View.ID, viaShortcut, 0)
	return "", qe, keep
}

// shortcutContext is what the model reads after the question: the message
// asked about, and the repository files and lines it links to.
func shortcutContext(text string) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nThe question is about this message from the conversation:\n<message>\n")
	b.WriteString(quoteTagRE().ReplaceAllString(text, "&lt;$1"))
	b.WriteString("\n</message>")
	for _, l := range fileLinks(text) {
		b.WriteString("\n" + l)
	}
	return b.String()
}

// quoteTagRE finds the message's own tags of the quote, in any case: the
// message is someone else's words, and a "</message>" in it (a bot's or
// an integration's message is not escaped as a person's is) would end
// the quote early and pass what follows for the asker's.
var quoteTagRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)<(/?\s*message)`) })

// blobLinkRE matches a link to a file at a revision, as GitHub, GitLab,
// Gitea and Forgejo write it, with optional lines: …/blob/REF/PATH#L10-L20
// (GitLab: #L10-20; Gitea: /src/branch/REF/PATH).
var blobLinkRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`https?://[^\s<>|]+?/(?:-/)?(?:blob|src/(?:branch|commit|tag))/([A-Za-z0-9._/-]+?)/([A-Za-z0-9._/-]+)(?:\?[^\s<>|#]*)?(?:#L(\d+)(?:-L?(\d+))?)?(?:[\s>|]|$)`)
})

// maxLinks bounds the file links read out of one message.
const maxLinks = 5

// fileLinks says which files and lines the message links to, so the model
// reads them in the checkout (where the link is to this repository; the
// tools' wall and deny-list still apply). The ref is a branch or commit
// whose own slashes cannot be told from the path's, so it is given as
// found and the path as the rest.
func fileLinks(text string) []string {
	var out []string
	for _, m := range blobLinkRE().FindAllStringSubmatch(text, maxLinks) {
		ref, path := m[1], m[2]
		if !fs.ValidPath(path) {
			continue // "..", ".", an absolute or empty part: not a file of a checkout
		}
		switch {
		case m[3] != "" && m[4] != "":
			out = append(out, fmt.Sprintf("It links to %s lines %s-%s (at %s): if that is a file of this repository, read those lines first.", path, m[3], m[4], ref))
		case m[3] != "":
			out = append(out, fmt.Sprintf("It links to %s line %s (at %s): if that is a file of this repository, read around that line first.", path, m[3], ref))
		default:
			out = append(out, fmt.Sprintf("It links to the file %s (at %s): if that is a file of this repository, read it first.", path, ref))
		}
	}
	return out
}
