package slackbot

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/render"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// hostileFeedback is what a person may type in the modal: escapes for a
// terminal, Slack markup that would ping a channel, a fake second entry.
const hostileFeedback = "CANARY-7 \x1b[2J\x1b]8;;http://evil\x07x\x1b]8;;\x07 <!channel> \u202ereversed\nrating: up"

// answered asks a question in C1 and returns its thread and the answer
// message, once the turn has ended.
func answered(t *testing.T, h *harness) (root string, answer slacktest.Message) {
	t.Helper()
	root = h.mention("C1", "what does this repo do?", "")
	h.waitTurns(1)
	as := answers(h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))
	if len(as) != 1 {
		t.Fatalf("thread has %d answers, want 1", len(as))
	}
	return root, as[0]
}

// waitLog waits until msg has been logged n times by h.
func waitLog(t *testing.T, h *harness, msg string, n int) {
	t.Helper()
	for ctx := h.ctx(); len(h.logLines(msg)) < n; {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d log lines %q, have %d", n, msg, len(h.logLines(msg)))
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// waitModals waits until n calls to views.open have been answered.
func waitModals(t *testing.T, h *harness, n int) {
	t.Helper()
	if _, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		done := 0
		for _, c := range st.CallsTo("views.open") {
			if c.Status != 0 {
				done++
			}
		}
		return done >= n
	}); err != nil {
		t.Fatal(err)
	}
}

func feedbackOf(t *testing.T, st session.Feedbacks) []session.Feedback {
	t.Helper()
	rs, err := st.FeedbackSince(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []session.Feedback
	for _, r := range rs {
		r.Time = time.Time{}
		out = append(out, r.Feedback)
	}
	return out
}

func click(t *testing.T, srv *slacktest.Server, c slacktest.FeedbackClick) {
	t.Helper()
	if _, err := srv.ClickFeedback(c); err != nil {
		t.Fatal(err)
	}
}

// 👍 is stored; a 👎 by the same person replaces it and opens the modal
// with the click's trigger; the modal's submission is stored with the
// rating; nothing the person typed goes back to Slack.
func TestFeedbackUpThenDownWithTheModal(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	root, answer := answered(t, h)
	turnID := h.logLines("turn")[0]["turn"].(string)
	if got := answer.BlockTypes(); got[len(got)-1] != "context_actions" {
		t.Fatalf("answer blocks = %v, want the feedback buttons last", got)
	}

	click(t, h.slack, slacktest.FeedbackClick{User: "U1", Channel: "C1", MessageTS: answer.TS, Positive: true})
	waitLog(t, h, "feedback recorded", 1)
	diff(t, "after 👍", []session.Feedback{{TurnID: turnID, User: "U1", Rating: session.RatingUp}}, feedbackOf(t, h.store))
	if n := len(h.slack.Calls("views.open")); n != 0 {
		t.Errorf("👍 opened %d modals, want none", n)
	}

	click(t, h.slack, slacktest.FeedbackClick{User: "U1", Channel: "C1", MessageTS: answer.TS})
	waitLog(t, h, "feedback recorded", 2)
	waitModals(t, h, 1)
	diff(t, "after 👎", []session.Feedback{{TurnID: turnID, User: "U1", Rating: session.RatingDown}}, feedbackOf(t, h.store))
	views := h.slack.Views()
	if len(views) != 1 || views[0].User != "U1" || views[0].CallbackID != render.FeedbackCallbackID {
		t.Fatalf("views opened = %+v, want the feedback modal for U1", views)
	}
	if opens := h.slack.Calls("views.open"); len(opens) != 1 || opens[0].Error != "" {
		t.Fatalf("views.open calls = %+v, want one that succeeded", opens)
	}

	if _, err := h.slack.SubmitView(views[0].ID,
		slacktest.Input{BlockID: "reason", ActionID: "reason", Value: "wrong_code"},
		slacktest.Input{BlockID: "comment", ActionID: "comment", Value: hostileFeedback}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, h, "feedback reason recorded", 1)
	diff(t, "after the modal", []session.Feedback{{TurnID: turnID, User: "U1", Rating: session.RatingDown, Reason: "wrong_code", Comment: hostileFeedback}}, feedbackOf(t, h.store))

	m := h.metrics()
	for _, want := range []string{`askrepo_feedback_total{rating="down"} 1`, `askrepo_feedback_total{rating="up"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(m, "feedback"))
		}
	}
	for _, c := range h.slack.Calls("") {
		if strings.Contains(c.Params.Encode(), "CANARY-7") {
			t.Errorf("the person's comment went back to Slack in %s", c.Method)
		}
	}
	if strings.Contains(h.logs.String(), "CANARY-7") {
		t.Error("the person's comment was logged")
	}
	if n := len(h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)); n != 2 {
		t.Errorf("thread has %d bot messages after feedback, want the progress and the answer", n)
	}
}

// Clicks that do not rate a turn of this conversation, or come from
// someone who may not use the bot, store nothing and open no modal.
func TestFeedbackRefused(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: func(c *Config) { c.AllowUsers = []string{"U1", "U7"} }})
	_, answer := answered(t, h)
	turnID := h.logLines("turn")[0]["turn"].(string)
	forged := func(user, channel, value string) slacktest.ButtonClick {
		return slacktest.ButtonClick{User: user, Channel: channel, MessageTS: answer.TS, ThreadTS: answer.ThreadTS,
			ActionID: render.FeedbackActionID, BlockID: render.FeedbackBlockID, Value: value, Text: "👎", Type: "feedback_buttons"}
	}
	cases := []struct {
		name string
		b    slacktest.ButtonClick
		log  string
	}{
		{"user not allowed", forged("U9", "C1", "down:"+turnID), "feedback refused: user not enabled"},
		{"value not ours", forged("U7", "C1", "sideways:"+turnID), "feedback refused: the button's value is not one this service writes"},
		{"unknown turn", forged("U7", "C1", "down:0000000000000000"), "feedback refused: no such turn (forged, or its thread was purged)"},
		{"another channel", forged("U7", "C2", "down:"+turnID), "feedback refused: it came from another conversation than the turn's"},
		{"another thread", func() slacktest.ButtonClick {
			b := forged("U7", "C1", "down:"+turnID)
			b.ThreadTS = "1700000099.000100"
			return b
		}(), "feedback refused: it came from another conversation than the turn's"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := len(h.logLines(tc.log))
			h.slack.ClickButton(tc.b)
			waitLog(t, h, tc.log, n+1)
		})
	}
	if got := feedbackOf(t, h.store); len(got) != 0 {
		t.Errorf("refused clicks stored %+v", got)
	}
	if n := len(h.slack.Calls("views.open")); n != 0 {
		t.Errorf("refused clicks opened %d modals", n)
	}
	if m := h.metrics(); !strings.Contains(m, `askrepo_feedback_total{rating="down"} 0`) {
		t.Errorf("/metrics counts refused clicks:\n%s", grepLines(m, "feedback"))
	}
	// A submission of a view the bot did not open is refused too.
	h.slack.SendInteraction(map[string]any{
		"type": "view_submission", "user": map[string]any{"id": "U7"},
		"view": map[string]any{"id": "V1", "type": "modal", "callback_id": render.FeedbackCallbackID, "private_metadata": "not json"},
	})
	waitLog(t, h, "feedback refused: a submission of a view this service did not open", 1)
}

// A 👎 whose trigger expired before the modal could open keeps the
// rating; the modal's failure is logged, not shown.
func TestFeedbackTriggerExpired(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	_, answer := answered(t, h)
	h.slack.SetTriggerTTL(0)
	click(t, h.slack, slacktest.FeedbackClick{User: "U1", Channel: "C1", MessageTS: answer.TS})
	waitLog(t, h, "feedback recorded", 1)
	waitModals(t, h, 1)
	waitLog(t, h, "feedback modal not opened; the rating is kept without a reason", 1)
	opens := h.slack.Calls("views.open")
	if len(opens) != 1 || opens[0].Error != "expired_trigger_id" {
		t.Fatalf("views.open calls = %+v, want one refused with expired_trigger_id", opens)
	}
	if n := len(h.logLines("feedback modal not opened; the rating is kept without a reason")); n != 1 {
		t.Errorf("logged %d failed modals, want 1", n)
	}
	if got := feedbackOf(t, h.store); len(got) != 1 || got[0].Rating != session.RatingDown {
		t.Errorf("stored %+v, want the 👎", got)
	}
}

// A Slack slow to open the modal does not hold the 👎 back, and the bot
// gives up on the modal when the click's trigger window closes, since
// Slack would refuse the trigger after it anyway.
func TestFeedbackModalGivesUpWithTheTriggerWindow(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	_, answer := answered(t, h)
	release := h.slack.Hold("views.open")
	t.Cleanup(release)
	click(t, h.slack, slacktest.FeedbackClick{User: "U1", Channel: "C1", MessageTS: answer.TS})
	waitLog(t, h, "feedback recorded", 1)
	if got := feedbackOf(t, h.store); len(got) != 1 || got[0].Rating != session.RatingDown {
		t.Fatalf("stored %+v while the modal was opening, want the 👎", got)
	}
	waitLog(t, h, "feedback modal not opened; the rating is kept without a reason", 1)
	// The fake records the call as given up once it sees the connection
	// go, which may be a moment after the bot has logged it.
	opens := h.slack.Calls("views.open")
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && (len(opens) != 1 || opens[0].Error == ""); {
		time.Sleep(20 * time.Millisecond)
		opens = h.slack.Calls("views.open")
	}
	if len(opens) != 1 || opens[0].Error != "client_gave_up" {
		t.Errorf("views.open calls = %+v, want one the bot gave up on", opens)
	}
}

// Slack delivers a click to any replica: the one that did not answer
// opens the modal and records the rating, and the submission, delivered
// to the other, is stored with it.
func TestReplicasFeedbackOnTheOtherReplica(t *testing.T) {
	p := newReplicaPair(t, readThenAnswer, nil)
	root := p.mention(t, p.connA, "C1", "what does this repo do?")
	p.waitTurns(t, 1)
	as := answers(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))
	if len(as) != 1 {
		t.Fatalf("thread has %d answers, want 1", len(as))
	}
	answerer, other, otherConn, answererConn := p.a, p.b, p.connB, p.connA
	if len(p.b.logLines("turn")) == 1 {
		answerer, other, otherConn, answererConn = p.b, p.a, p.connA, p.connB
	}
	if _, err := p.a.slack.ClickFeedbackTo(otherConn, slacktest.FeedbackClick{User: "U1", Channel: "C1", MessageTS: as[0].TS}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, other, "feedback recorded", 1)
	waitModals(t, other, 1)
	views := p.a.slack.Views()
	if len(views) != 1 {
		t.Fatalf("views opened = %+v, want the modal", views)
	}
	if _, err := p.a.slack.SubmitViewTo(answererConn, views[0].ID,
		slacktest.Input{BlockID: "reason", ActionID: "reason", Value: "missed"}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, answerer, "feedback reason recorded", 1)
	turnID := answerer.logLines("turn")[0]["turn"].(string)
	diff(t, "shared rating", []session.Feedback{{TurnID: turnID, User: "U1", Rating: session.RatingDown, Reason: "missed"}}, feedbackOf(t, p.a.store))
}

func diff(t *testing.T, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// A workspace that refuses the feedback buttons still gets the answer as
// formatted: only the buttons are dropped.
func TestAnswerRefusedWithFeedbackButtonsKeepsItsFormatting(t *testing.T) {
	as := answers(answerRefused(t, 1))
	if len(as) != 1 {
		t.Fatalf("thread has %d answers, want 1", len(as))
	}
	if got := as[0].BlockTypes(); strings.Join(got, " ") != "markdown context" {
		t.Errorf("answer blocks = %v, want markdown + footer without the buttons", got)
	}
}

// answerRefused asks a question and has Slack refuse the answer's first
// post refusals times with invalid_blocks; it returns the bot's messages
// in the thread once the turn has ended.
func answerRefused(t *testing.T, refusals int) []slacktest.Message {
	t.Helper()
	hold := newGate()
	t.Cleanup(hold.open)
	h := newHarness(t, harnessOpts{script: heldAnswer(hold)})
	root := h.mention("C1", "a question", "")
	if _, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		ms := st.BotMessages("C1", root, slacktest.DefaultBotID)
		return len(ms) == 1 && strings.Count(ms[0].Text, "✓") == 2
	}); err != nil {
		t.Fatal(err)
	}
	for range refusals {
		h.slack.FailNext("chat.postMessage", slacktest.SlackError("invalid_blocks"))
	}
	hold.open()
	h.waitTurns(1)
	return h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)
}
