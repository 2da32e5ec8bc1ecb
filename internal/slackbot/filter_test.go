package slackbot

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack/slackevents"

	"github.com/askrepo/askrepo/internal/session"
)

var self = identity{UserID: "UBOT", BotID: "BBOT", TeamID: "T1"}

func TestFromMention(t *testing.T) {
	tests := []struct {
		name string
		ev   slackevents.AppMentionEvent
		want inbound
		why  string
	}{
		{
			name: "top-level mention starts a thread at its own ts",
			ev:   slackevents.AppMentionEvent{User: "U1", Channel: "C1", TimeStamp: "1.1", Text: "<@UBOT> where is main?"},
			want: inbound{Key: session.Key{Team: "T1", Channel: "C1", Thread: "1.1"}, EventID: "Ev1", User: "U1", TS: "1.1", Text: "where is main?"},
		},
		{
			name: "mention in a thread keys on the thread",
			ev:   slackevents.AppMentionEvent{User: "U1", Channel: "C1", TimeStamp: "1.5", ThreadTimeStamp: "1.1", Text: "<@UBOT|askrepo>: and tests?"},
			want: inbound{Key: session.Key{Team: "T1", Channel: "C1", Thread: "1.1"}, EventID: "Ev1", User: "U1", TS: "1.5", Text: "and tests?"},
		},
		{
			name: "other mentions are kept",
			ev:   slackevents.AppMentionEvent{User: "U1", Channel: "C1", TimeStamp: "1.1", Text: "<@UBOT> what did <@U2> change?"},
			want: inbound{Key: session.Key{Team: "T1", Channel: "C1", Thread: "1.1"}, EventID: "Ev1", User: "U1", TS: "1.1", Text: "what did <@U2> change?"},
		},
		{name: "another bot", ev: slackevents.AppMentionEvent{User: "U5", BotID: "B5", Channel: "C1", TimeStamp: "1.1"}, why: ignoreBot},
		{name: "ourselves", ev: slackevents.AppMentionEvent{User: "UBOT", Channel: "C1", TimeStamp: "1.1"}, why: ignoreSelf},
		{name: "edit", ev: slackevents.AppMentionEvent{User: "U1", Channel: "C1", TimeStamp: "1.1", Edited: &slackevents.Edited{User: "U1", TimeStamp: "2.2"}}, why: ignoreEdited},
		{name: "no user", ev: slackevents.AppMentionEvent{Channel: "C1", TimeStamp: "1.1"}, why: ignoreNoUser},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := fromMention("T1", "Ev1", &tt.ev, self)
			checkInbound(t, got, why, tt.want, tt.why)
		})
	}
}

func TestFromMessage(t *testing.T) {
	key := session.Key{Team: "T1", Channel: "C1", Thread: "1.1"}
	tests := []struct {
		name string
		ev   slackevents.MessageEvent
		want inbound
		why  string
	}{
		{
			name: "thread reply without mention is a follow-up",
			ev:   slackevents.MessageEvent{User: "U1", Channel: "C1", ChannelType: "channel", TimeStamp: "1.5", ThreadTimeStamp: "1.1", Text: "and tests?"},
			want: inbound{Key: key, EventID: "Ev1", User: "U1", TS: "1.5", Text: "and tests?", FollowUp: true},
		},
		{
			name: "broadcast thread reply is a follow-up",
			ev:   slackevents.MessageEvent{User: "U1", Channel: "C1", ChannelType: "group", SubType: "thread_broadcast", TimeStamp: "1.5", ThreadTimeStamp: "1.1", Text: "x"},
			want: inbound{Key: key, EventID: "Ev1", User: "U1", TS: "1.5", Text: "x", FollowUp: true},
		},
		{
			name: "top-level DM starts a thread",
			ev:   slackevents.MessageEvent{User: "U1", Channel: "D1", ChannelType: "im", TimeStamp: "2.1", Text: "hi"},
			want: inbound{Key: session.Key{Team: "T1", Channel: "D1", Thread: "2.1"}, EventID: "Ev1", User: "U1", TS: "2.1", Text: "hi", IM: true},
		},
		{
			name: "DM with a mention has it stripped",
			ev:   slackevents.MessageEvent{User: "U1", Channel: "D1", ChannelType: "im", TimeStamp: "2.2", ThreadTimeStamp: "2.1", Text: "<@UBOT> hi"},
			want: inbound{Key: session.Key{Team: "T1", Channel: "D1", Thread: "2.1"}, EventID: "Ev1", User: "U1", TS: "2.2", Text: "hi", IM: true},
		},
		{name: "top-level channel message", ev: slackevents.MessageEvent{User: "U1", Channel: "C1", ChannelType: "channel", TimeStamp: "1.1", Text: "hello"}, why: ignoreTopLevel},
		{name: "thread reply with mention is app_mention's", ev: slackevents.MessageEvent{User: "U1", Channel: "C1", ChannelType: "channel", TimeStamp: "1.5", ThreadTimeStamp: "1.1", Text: "<@UBOT> x"}, why: ignoreMention},
		{name: "our own post", ev: slackevents.MessageEvent{User: "UBOT", BotID: "BBOT", Channel: "C1", ChannelType: "channel", TimeStamp: "1.5", ThreadTimeStamp: "1.1"}, why: ignoreSelf},
		{name: "another app's post", ev: slackevents.MessageEvent{User: "U9", BotID: "B9", Channel: "C1", ChannelType: "channel", TimeStamp: "1.5", ThreadTimeStamp: "1.1"}, why: ignoreBot},
		{name: "legacy bot_message", ev: slackevents.MessageEvent{SubType: "bot_message", BotID: "B9", Channel: "C1", ChannelType: "channel", TimeStamp: "1.5", ThreadTimeStamp: "1.1"}, why: ignoreBot},
		{name: "edit", ev: slackevents.MessageEvent{SubType: "message_changed", Channel: "C1", ChannelType: "channel", TimeStamp: "1.6"}, why: ignoreSubtype},
		{name: "delete", ev: slackevents.MessageEvent{SubType: "message_deleted", Channel: "C1", ChannelType: "channel", TimeStamp: "1.6"}, why: ignoreSubtype},
		{name: "join", ev: slackevents.MessageEvent{SubType: "channel_join", User: "U1", Channel: "C1", ChannelType: "channel", TimeStamp: "1.6"}, why: ignoreSubtype},
		{name: "our own DM reply", ev: slackevents.MessageEvent{User: "UBOT", Channel: "D1", ChannelType: "im", TimeStamp: "2.2", ThreadTimeStamp: "2.1"}, why: ignoreSelf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := fromMessage("T1", "Ev1", &tt.ev, self)
			checkInbound(t, got, why, tt.want, tt.why)
		})
	}
}

// checkInbound compares what a filter made of an event with what it should
// have: the reason it ignored the event, or else the inbound question.
func checkInbound(t *testing.T, got inbound, why string, want inbound, wantWhy string) {
	t.Helper()
	if why != wantWhy {
		t.Fatalf("reason = %q, want %q", why, wantWhy)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(inbound{})); diff != "" {
		t.Errorf("inbound (-want +got):\n%s", diff)
	}
}

func TestStripMention(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<@UBOT> hi", "hi"},
		{"<@UBOT>: hi", "hi"},
		{"<@UBOT|askrepo>, hi", "hi"},
		{"hi <@UBOT> there", "hi there"},
		{"<@UBOT>", ""},
		{"<@U2> and <@UBOT> look", "<@U2> and look"},
		{"  line one\nline two  ", "line one\nline two"},
	}
	for _, tt := range tests {
		if got := stripMention(tt.in, "UBOT"); got != tt.want {
			t.Errorf("stripMention(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
