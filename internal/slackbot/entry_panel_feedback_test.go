package slackbot

import (
	"testing"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// A panel thread's answer takes 👍/👎 like any other: the click, from the
// panel's DM, is stored with the turn it rates.
func TestPanelAnswerTakesFeedback(t *testing.T) {
	h := panelHarness(t, harnessOpts{})
	thread, _ := h.openPanel("C1")
	if _, err := h.slack.WaitMessages(h.ctx(), "D1", thread, 1); err != nil {
		t.Fatal(err)
	}
	h.slack.Reply("D1", "U1", "where is billing handled?", thread)
	turnID := h.waitTurns(1)[0]["turn"].(string)
	got := answers(h.slack.Snapshot().BotMessages("D1", thread, slacktest.DefaultBotID))
	if len(got) != 1 {
		t.Fatalf("%d answers in the panel thread, want 1", len(got))
	}
	if b := got[0].BlockTypes(); b[len(b)-1] != "context_actions" {
		t.Fatalf("panel answer blocks %v, want the feedback buttons last", b)
	}
	click(t, h.slack, slacktest.FeedbackClick{User: "U1", Channel: "D1", MessageTS: got[0].TS, Positive: true})
	waitLog(t, h, "feedback recorded", 1)
	diff(t, "after 👍 in the panel", []session.Feedback{{TurnID: turnID, User: "U1", Rating: session.RatingUp}}, feedbackOf(t, h.store))
}
