package slacktest_test

import (
	"testing"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

func modal(title string) slack.ModalViewRequest {
	return slack.ModalViewRequest{
		Type:       slack.VTModal,
		CallbackID: "cb",
		Title:      slack.NewTextBlockObject(slack.PlainTextType, title, false, false),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "hi", false, false), nil, nil),
		}},
	}
}

func TestViewsOpenTakesATriggerOnce(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	_, trigger := srv.SendMessageShortcut(slacktest.MessageShortcut{User: "U1", Channel: "C1", MessageTS: "1700000000.000100", CallbackID: "x"})
	tests := []struct {
		name, trigger, title, want string
	}{
		{"unknown trigger", "trigger-999", "Ask", "invalid_trigger_id"},
		{"title too long", trigger, "A title far longer than Slack allows", "invalid_arguments"},
		{"opens", trigger, "Ask", ""},
		{"trigger used", trigger, "Ask", "exchanged_trigger_id"},
	}
	for _, tt := range tests {
		_, err := api.OpenViewContext(t.Context(), tt.trigger, modal(tt.title))
		if got := slackErr(err); got != tt.want {
			t.Errorf("%s: views.open error %q, want %q", tt.name, got, tt.want)
		}
	}
	views := srv.Views()
	if len(views) != 1 || views[0].User != "U1" || views[0].CallbackID != "cb" || views[0].Type != "modal" {
		t.Errorf("views %+v, want U1's modal", views)
	}
	if _, err := srv.SubmitViewAs("U1", "V404", nil); err == nil {
		t.Error("SubmitView of a view never opened succeeded")
	}
}

func TestViewsPublishHomeOnly(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	home := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: modal("x").Blocks}
	if _, err := api.PublishViewContext(t.Context(), slack.PublishViewContextRequest{UserID: "U1", View: home}); err != nil {
		t.Fatal(err)
	}
	bad := slack.HomeTabViewRequest{Type: slack.VTModal, Blocks: modal("x").Blocks}
	if _, err := api.PublishViewContext(t.Context(), slack.PublishViewContextRequest{UserID: "U1", View: bad}); slackErr(err) != "invalid_arguments" {
		t.Errorf("publishing a modal as a Home tab: %v", err)
	}
	if v := srv.Views(); len(v) != 1 || v[0].Type != "home" || v[0].AllText() != "hi" {
		t.Errorf("views %+v", v)
	}
}

func TestSuggestedPromptsAtMostFour(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	prompts := func(n int) []slack.AssistantThreadsPrompt {
		out := make([]slack.AssistantThreadsPrompt, n)
		for i := range out {
			out[i] = slack.AssistantThreadsPrompt{Title: "t", Message: "m"}
		}
		return out
	}
	for n, want := range map[int]string{0: "invalid_arguments", 4: "", 5: "invalid_arguments"} {
		err := api.SetAssistantThreadsSuggestedPromptsContext(t.Context(), slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: "D1", ThreadTS: "1.0", Prompts: prompts(n)})
		if got := slackErr(err); got != want {
			t.Errorf("%d prompts: error %q, want %q", n, got, want)
		}
	}
	if got := srv.Snapshot().Prompts; len(got) != 1 || len(got[0].Prompts) != 4 {
		t.Errorf("prompts recorded %+v", got)
	}
}

func TestMetadataComesBackWhenAskedFor(t *testing.T) {
	srv := newServer(t)
	api := srv.Client()
	srv.SendEvent(slacktest.AssistantThreadStarted("U1", "D1", "1700000000.000100", "C1"))
	meta := slack.SlackMetadata{EventType: "kept", EventPayload: map[string]any{"channel": "C1"}}
	if _, _, err := api.PostMessageContext(t.Context(), "D1", slack.MsgOptionText("hi", false), slack.MsgOptionTS("1700000000.000100"), slack.MsgOptionMetadata(meta)); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		msgs, _, _, err := api.GetConversationRepliesContext(t.Context(), &slack.GetConversationRepliesParameters{ChannelID: "D1", Timestamp: "1700000000.000100", IncludeAllMetadata: all})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 || msgs[0].SubType != "assistant_app_thread" {
			t.Fatalf("thread %+v: want the panel's root and the reply", msgs)
		}
		if got := msgs[1].Metadata.EventType; (got == "kept") != all {
			t.Errorf("include_all_metadata %v: metadata %+v", all, msgs[1].Metadata)
		}
	}
}
