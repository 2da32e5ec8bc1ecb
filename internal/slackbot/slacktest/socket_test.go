package slacktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// waitTimeout bounds every wait; nothing in these tests sleeps.
const waitTimeout = 10 * time.Second

func waitCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

func newServer(t testing.TB, opts ...slacktest.Option) *slacktest.Server {
	t.Helper()
	srv := slacktest.New(opts...)
	t.Cleanup(srv.Close)
	return srv
}

// runSocketMode starts the real slack-go Socket Mode client against srv and stops it
// when the test ends.
func runSocketMode(t testing.TB, srv *slacktest.Server, opts ...socketmode.Option) *socketmode.Client {
	t.Helper()
	opts = append([]socketmode.Option{socketmode.OptionPingInterval(2 * time.Second)}, opts...)
	sm := socketmode.New(srv.Client(), opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sm.RunContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("RunContext returned %v, want context.Canceled", err)
		}
	})
	return sm
}

// nextEvent returns the next client event of type want, skipping others.
func nextEvent(t testing.TB, sm *socketmode.Client, want socketmode.EventType) socketmode.Event {
	t.Helper()
	ctx := waitCtx(t)
	for {
		select {
		case ev := <-sm.Events:
			if ev.Type == want {
				return ev
			}
		case <-ctx.Done():
			t.Fatalf("no %s event from the client: %v", want, ctx.Err())
		}
	}
}

func TestSocketModeHelloEventAndAck(t *testing.T) {
	srv := newServer(t)
	sm := runSocketMode(t, srv)

	hello := nextEvent(t, sm, socketmode.EventTypeHello)
	if hello.Request.NumConnections != 1 || hello.Request.ConnectionInfo.AppID != slacktest.DefaultAppID {
		t.Errorf("hello = %+v, want num_connections 1 and app_id %s", hello.Request, slacktest.DefaultAppID)
	}

	envID := srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> where is main?", "", ""))
	ev := nextEvent(t, sm, socketmode.EventTypeEventsAPI)
	if ev.Request.EnvelopeID != envID {
		t.Errorf("envelope_id = %q, want %q", ev.Request.EnvelopeID, envID)
	}
	api, ok := ev.Data.(slackevents.EventsAPIEvent)
	if !ok {
		t.Fatalf("Data is %T, want slackevents.EventsAPIEvent", ev.Data)
	}
	cb, ok := api.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok || cb.EventID == "" || cb.TeamID != slacktest.DefaultTeamID || len(cb.Authorizations) != 1 || cb.Authorizations[0].UserID != slacktest.DefaultBotUserID {
		t.Errorf("callback = %+v, want event_id, team T1 and an authorization for UBOT", api.Data)
	}
	mention, ok := api.InnerEvent.Data.(*slackevents.AppMentionEvent)
	if !ok {
		t.Fatalf("inner event is %T, want *slackevents.AppMentionEvent", api.InnerEvent.Data)
	}
	if mention.Channel != "C1" || mention.User != "U1" || mention.Text != "<@UBOT> where is main?" || mention.TimeStamp == "" || mention.ThreadTimeStamp != "" {
		t.Errorf("mention = %+v", mention)
	}
	if len(mention.Blocks.BlockSet) != 1 || mention.Blocks.BlockSet[0].BlockType() != slack.MBTRichText {
		t.Errorf("mention blocks = %+v, want one rich_text block", mention.Blocks.BlockSet)
	}

	if err := sm.Ack(*ev.Request); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	ack, err := srv.WaitAck(waitCtx(t), envID)
	if err != nil {
		t.Fatal(err)
	}
	if !ack.Known || ack.Latency <= 0 || ack.Conn != 1 {
		t.Errorf("ack = %+v, want a known ack with positive latency on conn 1", ack)
	}
	if got := srv.AckLatencies(); len(got) != 1 {
		t.Errorf("AckLatencies = %v, want one", got)
	}
	// The mention is in the store, so conversations.replies would see it.
	if m, ok := srv.Message("C1", mention.TimeStamp); !ok || m.User != "U1" || m.Via != "event" {
		t.Errorf("stored mention = %+v, %v", m, ok)
	}
}
