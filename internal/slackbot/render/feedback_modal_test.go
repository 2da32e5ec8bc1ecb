package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

func TestFeedbackModalRoundTrips(t *testing.T) {
	m := FeedbackModal("t-1", "C1", 3000)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range FeedbackReasons {
		if !strings.Contains(string(b), `"value":"`+r.Code+`"`) {
			t.Errorf("modal lacks the reason %s: %s", r.Code, b)
		}
	}
	if n := len([]rune(m.Title.Text)); n > 24 {
		t.Errorf("title is %d characters; Slack allows 24", n)
	}
	state := func(reason, comment string) *slack.ViewState {
		return &slack.ViewState{Values: map[string]map[string]slack.BlockAction{
			feedbackReasonBlock:  {feedbackReasonAction: {SelectedOption: slack.OptionBlockObject{Value: reason}}},
			feedbackCommentBlock: {feedbackCommentAction: {Value: comment}},
		}}
	}
	view := func(cb, meta string, st *slack.ViewState) slack.View {
		return slack.View{CallbackID: cb, PrivateMetadata: meta, State: st}
	}
	tests := []struct {
		name string
		v    slack.View
		want FeedbackSubmission
		ok   bool
	}{
		{"as sent", view(FeedbackCallbackID, m.PrivateMetadata, state("too_long", "  shorter please \n")),
			FeedbackSubmission{TurnID: "t-1", Channel: "C1", Reason: "too_long", Comment: "shorter please"}, true},
		{"a reason the modal does not offer", view(FeedbackCallbackID, m.PrivateMetadata, state("<!channel>", "x")),
			FeedbackSubmission{TurnID: "t-1", Channel: "C1", Comment: "x"}, true},
		{"too long and not UTF-8", view(FeedbackCallbackID, m.PrivateMetadata, state("other", strings.Repeat("é", 25)+"\xff")),
			FeedbackSubmission{TurnID: "t-1", Channel: "C1", Reason: "other", Comment: strings.Repeat("é", 20)}, true},
		{"another view", view("other", m.PrivateMetadata, nil), FeedbackSubmission{}, false},
		{"metadata not ours", view(FeedbackCallbackID, "t-1", nil), FeedbackSubmission{}, false},
	}
	for _, tc := range tests {
		got, ok := ParseFeedbackSubmission(tc.v, 20)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: ParseFeedbackSubmission = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
