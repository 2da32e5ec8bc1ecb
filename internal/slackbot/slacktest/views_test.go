package slacktest_test

import (
	"testing"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

func TestViewsOpenHonoursATriggerOnceWithinItsWindow(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	plain := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
	}
	input := slack.NewInputBlock("b", plain("Why"), nil, slack.NewPlainTextInputBlockElement(nil, "a"))
	modal := slack.ModalViewRequest{Type: slack.VTModal, Title: plain("Feedback"), Submit: plain("Send"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{input}}, CallbackID: "cb", PrivateMetadata: "meta"}
	click := slacktest.ButtonClick{User: "U1", Channel: "C1", MessageTS: "1700000000.000100", ActionID: "x", Value: "v"}
	open := func(trigger string, v slack.ModalViewRequest) (*slack.ViewResponse, string) {
		resp, err := api.OpenViewContext(t.Context(), trigger, v)
		if err != nil {
			return nil, err.Error()
		}
		return resp, ""
	}

	if _, err := open("trigger-99", modal); err != "invalid_trigger_id" {
		t.Errorf("unknown trigger: err %q, want invalid_trigger_id", err)
	}
	srv.ClickButton(click) // trigger-1
	noSubmit := modal
	noSubmit.Submit = nil
	if _, err := open("trigger-1", noSubmit); err != "invalid_arguments" {
		t.Errorf("inputs without a submit button: err %q, want invalid_arguments", err)
	}
	resp, err := open("trigger-1", modal)
	if err != "" || resp.View.ID == "" || resp.View.CallbackID != "cb" || resp.View.PrivateMetadata != "meta" {
		t.Fatalf("views.open = %+v, %q; want the view back with its id", resp, err)
	}
	if _, err := open("trigger-1", modal); err != "exchanged_trigger_id" {
		t.Errorf("trigger used twice: err %q, want exchanged_trigger_id", err)
	}
	srv.ClickButton(click) // trigger-2
	srv.ExpireTriggers()
	if _, err := open("trigger-2", modal); err != "expired_trigger_id" {
		t.Errorf("trigger past its window: err %q, want expired_trigger_id", err)
	}
	views := srv.Views()
	if len(views) != 1 || views[0].User != "U1" || views[0].TriggerID != "trigger-1" {
		t.Errorf("views = %+v, want the one opened for U1", views)
	}
	if _, err := srv.SubmitView(views[0].ID, slacktest.Input{BlockID: "b", ActionID: "nope", Value: "x"}); err == nil {
		t.Error("SubmitView into an element the view lacks: want an error")
	}
}
