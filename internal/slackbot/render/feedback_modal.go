package render

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// FeedbackCallbackID names the modal a 👎 opens, so its view_submission
// can be told from other views.
const FeedbackCallbackID = "askrepo_feedback"

// The modal's inputs, as they come back in a view_submission's state.
const (
	feedbackReasonBlock   = "reason"
	feedbackReasonAction  = "reason"
	feedbackCommentBlock  = "comment"
	feedbackCommentAction = "comment"
)

// FeedbackReasons are what the modal offers as what was wrong with an
// answer: the code stored, and the label shown.
var FeedbackReasons = []struct{ Code, Label string }{
	{"wrong", "Wrong or outdated"},
	{"missed", "Missed something"},
	{"wrong_code", "Cited the wrong code"},
	{"too_long", "Too long"},
	{"other", "Other"},
}

// feedbackMeta is the modal's private_metadata: the turn it is about,
// and the channel of the answer, which the submission does not carry.
type feedbackMeta struct {
	Turn    string `json:"turn"`
	Channel string `json:"channel"`
}

// FeedbackModal is the modal a 👎 opens: what was wrong (one of
// FeedbackReasons) and, optionally, what the person wants to add, up to
// maxComment characters (Slack's own cap is 3000).
func FeedbackModal(turnID, channel string, maxComment int) slack.ModalViewRequest {
	opts := make([]*slack.OptionBlockObject, 0, len(FeedbackReasons))
	for _, r := range FeedbackReasons {
		opts = append(opts, slack.NewOptionBlockObject(r.Code, plain(r.Label), nil))
	}
	reason := slack.NewInputBlock(feedbackReasonBlock, plain("What was wrong with the answer?"), nil,
		slack.NewRadioButtonsBlockElement(feedbackReasonAction, opts...))
	text := slack.NewPlainTextInputBlockElement(plain("What should it have said, or looked at?"), feedbackCommentAction)
	text.Multiline, text.MaxLength = true, maxComment
	comment := slack.NewInputBlock(feedbackCommentBlock, plain("Anything to add"), nil, text)
	comment.Optional = true
	meta, _ := json.Marshal(feedbackMeta{Turn: turnID, Channel: channel})
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain("What went wrong?"),
		Submit:          plain("Send"),
		Close:           plain("Cancel"),
		Blocks:          slack.Blocks{BlockSet: []slack.Block{reason, comment}},
		CallbackID:      FeedbackCallbackID,
		PrivateMetadata: string(meta),
	}
}

// FeedbackSubmission is what a person sent with the feedback modal.
type FeedbackSubmission struct {
	TurnID, Channel string
	// Reason is the code of the reason picked; "" if none was, or the
	// payload named one the modal does not offer.
	Reason string
	// Comment is what the person wrote, trimmed, as valid UTF-8, cut at
	// maxComment characters. It is untrusted text.
	Comment string
}

// ParseFeedbackSubmission reads the feedback modal's view_submission; ok
// is false for a view this service did not open.
func ParseFeedbackSubmission(v slack.View, maxComment int) (FeedbackSubmission, bool) {
	var meta feedbackMeta
	if v.CallbackID != FeedbackCallbackID || json.Unmarshal([]byte(v.PrivateMetadata), &meta) != nil || meta.Turn == "" {
		return FeedbackSubmission{}, false
	}
	sub := FeedbackSubmission{TurnID: meta.Turn, Channel: meta.Channel}
	if v.State == nil {
		return sub, true
	}
	picked := v.State.Values[feedbackReasonBlock][feedbackReasonAction].SelectedOption.Value
	for _, r := range FeedbackReasons {
		if r.Code == picked {
			sub.Reason = picked
		}
	}
	c := strings.TrimSpace(strings.ToValidUTF8(v.State.Values[feedbackCommentBlock][feedbackCommentAction].Value, "\uFFFD"))
	if utf8.RuneCountInString(c) > maxComment {
		c = string([]rune(c)[:maxComment])
	}
	sub.Comment = c
	return sub, true
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}
