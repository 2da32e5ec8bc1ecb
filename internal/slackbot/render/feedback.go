package render

import (
	"strings"

	"github.com/slack-go/slack"
)

// FeedbackBlockID and FeedbackActionID name the feedback buttons under an
// answer, so the service can tell their clicks from other interactions.
const (
	FeedbackBlockID  = "askrepo_feedback"
	FeedbackActionID = "askrepo_feedback"
)

// Ratings a feedback click carries, as the first part of the button's value.
const (
	RatingUp   = "up"
	RatingDown = "down"
)

// Feedback is the block that goes under every answer, in both the
// streamed and the message UI: Slack's own 👍/👎 feedback buttons. Each
// button's value is "RATING:TURN", so a click names the turn it rates
// without the service having to look the message up.
func Feedback(turnID string) slack.Block {
	up := slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, "👍", true, false), RatingUp+":"+turnID).
		WithAccessibilityLabel("This answer was helpful")
	down := slack.NewFeedbackButton(slack.NewTextBlockObject(slack.PlainTextType, "👎", true, false), RatingDown+":"+turnID).
		WithAccessibilityLabel("This answer was not helpful")
	return slack.NewContextActionsBlock(FeedbackBlockID, slack.NewFeedbackButtonsBlockElement(FeedbackActionID, up, down))
}

// ParseFeedback reads a feedback button's value back into its rating and
// turn; ok is false for a value this service did not write.
func ParseFeedback(value string) (rating, turnID string, ok bool) {
	rating, turnID, found := strings.Cut(value, ":")
	if !found || turnID == "" || (rating != RatingUp && rating != RatingDown) {
		return "", "", false
	}
	return rating, turnID, true
}
