package slacktest_test

import (
	"context"
	"encoding/json"
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

// connect runs the client against srv (see runSocketMode) and returns
// once Slack's hello has arrived: the connection is open and events sent
// from now on reach it.
func connect(t testing.TB, srv *slacktest.Server) *socketmode.Client {
	t.Helper()
	sm := runSocketMode(t, srv)
	nextEvent(t, sm, socketmode.EventTypeHello)
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

func TestEventShapesAsSlackGoParsesThem(t *testing.T) {
	srv := newServer(t)
	sm := connect(t, srv)

	tests := []struct {
		name  string
		ev    slacktest.Event
		check func(t *testing.T, req *socketmode.Request, inner any)
	}{
		{
			name: "thread reply in a channel",
			ev:   slacktest.UserMessage("C1", "channel", "U1", "and tests?", "1700000001.000100", "1700000000.000100"),
			check: func(t *testing.T, _ *socketmode.Request, inner any) {
				m := inner.(*slackevents.MessageEvent)
				if m.ChannelType != "channel" || m.ThreadTimeStamp != "1700000000.000100" || m.SubType != "" || m.User != "U1" || m.Text != "and tests?" {
					t.Errorf("message = %+v", m)
				}
			},
		},
		{
			name: "direct message",
			ev:   slacktest.UserMessage("D1", "im", "U1", "hello", "", ""),
			check: func(t *testing.T, _ *socketmode.Request, inner any) {
				m := inner.(*slackevents.MessageEvent)
				if !m.IsIM() || m.TimeStamp == "" || m.EventTimeStamp != m.TimeStamp {
					t.Errorf("message = %+v, want an IM with ts == event_ts", m)
				}
			},
		},
		{
			name: "other bot",
			ev:   slacktest.BotMessage("C1", "channel", "B9", "beep", "", ""),
			check: func(t *testing.T, _ *socketmode.Request, inner any) {
				m := inner.(*slackevents.MessageEvent)
				if m.SubType != slack.MsgSubTypeBotMessage || m.BotID != "B9" || m.User != "" {
					t.Errorf("message = %+v", m)
				}
			},
		},
		{
			name: "own post echoed back",
			ev:   slacktest.AppMessage("C1", "channel", "UBOT", "BBOT", "answer", "", "1700000000.000100"),
			check: func(t *testing.T, _ *socketmode.Request, inner any) {
				m := inner.(*slackevents.MessageEvent)
				if m.SubType != "" || m.BotID != "BBOT" || m.User != "UBOT" {
					t.Errorf("message = %+v", m)
				}
			},
		},
		{
			name: "edit",
			ev:   slacktest.MessageChanged("C1", "channel", "U1", "1700000001.000100", "1700000000.000100", "new", "old"),
			check: func(t *testing.T, _ *socketmode.Request, inner any) {
				m := inner.(*slackevents.MessageEvent)
				if m.SubType != "message_changed" || m.Message == nil || m.Message.Text != "new" || m.PreviousMessage == nil || m.PreviousMessage.Text != "old" || m.User != "" {
					t.Errorf("message = %+v", m)
				}
			},
		},
		{
			name: "delete",
			ev:   slacktest.MessageDeleted("C1", "channel", "1700000001.000100"),
			check: func(t *testing.T, _ *socketmode.Request, inner any) {
				m := inner.(*slackevents.MessageEvent)
				if m.SubType != "message_deleted" || m.DeletedTimeStamp != "1700000001.000100" {
					t.Errorf("message = %+v", m)
				}
			},
		},
		{
			name: "join",
			ev:   slacktest.ChannelJoin("C1", "U2"),
			check: func(t *testing.T, _ *socketmode.Request, inner any) {
				m := inner.(*slackevents.MessageEvent)
				if m.SubType != "channel_join" || m.User != "U2" {
					t.Errorf("message = %+v", m)
				}
			},
		},
		{
			name: "retry of a mention",
			ev:   slacktest.AppMention("C1", "U1", "<@UBOT> again", "", "").Retry(2, "timeout"),
			check: func(t *testing.T, req *socketmode.Request, inner any) {
				if _, ok := inner.(*slackevents.AppMentionEvent); !ok {
					t.Errorf("inner = %T", inner)
				}
				if req.RetryAttempt != 2 || req.RetryReason != "timeout" {
					t.Errorf("retry = %d %q, want 2 timeout", req.RetryAttempt, req.RetryReason)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envID := srv.SendEvent(tt.ev)
			ev := nextEvent(t, sm, socketmode.EventTypeEventsAPI)
			if ev.Request.EnvelopeID != envID {
				t.Fatalf("got envelope %s, want %s", ev.Request.EnvelopeID, envID)
			}
			tt.check(t, ev.Request, ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data)
			if err := sm.Ack(*ev.Request); err != nil {
				t.Fatal(err)
			}
		})
	}

	// The store followed the edit and the delete of the thread reply.
	m, ok := srv.Message("C1", "1700000001.000100")
	if !ok || !m.Deleted || m.Text != "new" || len(m.Edits) != 1 || m.Edits[0].Text != "and tests?" {
		t.Errorf("stored reply = %+v, %v; want edited to new, then deleted", m, ok)
	}
}

func TestDisconnectFrameMakesClientReconnectWithNewTicket(t *testing.T) {
	srv := newServer(t)
	sm := connect(t, srv)

	if n := srv.Disconnect("refresh_requested"); n != 1 {
		t.Fatalf("Disconnect told %d connections, want 1", n)
	}
	st, err := srv.WaitFor(waitCtx(t), func(st *slacktest.State) bool {
		return st.Tickets == 2 && len(st.Conns) == 2 && st.Live() == 1 && !st.Conns[0].Live()
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Conns[0].Ticket == st.Conns[1].Ticket || !st.Conns[0].Draining {
		t.Errorf("conns = %+v, want a draining old one and a new ticket", st.Conns)
	}
	if srv.Connections() != 1 {
		t.Errorf("Connections = %d, want 1", srv.Connections())
	}

	// Envelopes now go to the new connection.
	envID := srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> still there?", "", ""))
	ev := nextEvent(t, sm, socketmode.EventTypeEventsAPI)
	if err := sm.Ack(*ev.Request); err != nil {
		t.Fatal(err)
	}
	ack, err := srv.WaitAck(waitCtx(t), envID)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Conn != st.Conns[1].ID {
		t.Errorf("ack came on conn %d, want %d", ack.Conn, st.Conns[1].ID)
	}
}

func TestDroppedConnectionIsReopened(t *testing.T) {
	srv := newServer(t)
	connect(t, srv)
	if n := srv.DropConnections(); n != 1 {
		t.Fatalf("dropped %d, want 1", n)
	}
	if _, err := srv.WaitFor(waitCtx(t), func(st *slacktest.State) bool {
		return st.Tickets == 2 && st.Live() == 1
	}); err != nil {
		t.Fatal(err)
	}
}

func TestPings(t *testing.T) {
	t.Run("keep the client connected", func(t *testing.T) {
		srv := newServer(t, slacktest.WithPingInterval(10*time.Millisecond))
		runSocketMode(t, srv, socketmode.OptionPingInterval(300*time.Millisecond))
		// 70 pongs 10 ms apart span more than two watchdog intervals.
		st, err := srv.WaitFor(waitCtx(t), func(st *slacktest.State) bool {
			return len(st.Conns) > 0 && st.Conns[0].Pongs >= 70
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Tickets != 1 || !st.Conns[0].Live() {
			t.Errorf("client reconnected despite pings: %+v", st.Conns)
		}
	})
	t.Run("missing pings trip the client watchdog", func(t *testing.T) {
		srv := newServer(t, slacktest.WithPingInterval(-1))
		runSocketMode(t, srv, socketmode.OptionPingInterval(100*time.Millisecond))
		st, err := srv.WaitFor(waitCtx(t), func(st *slacktest.State) bool { return st.Tickets >= 2 })
		if err != nil {
			t.Fatal(err)
		}
		if st.Conns[0].Pings != 0 {
			t.Errorf("pings sent with pings disabled: %+v", st.Conns[0])
		}
	})
}

func TestEnvelopesSentWhileOfflineArriveAfterHelloInOrder(t *testing.T) {
	srv := newServer(t)
	first := srv.SendEvent(slacktest.UserMessage("D1", "im", "U1", "one", "", ""))
	second := srv.SendEvent(slacktest.UserMessage("D1", "im", "U1", "two", "", ""))

	sm := connect(t, srv)
	for _, want := range []string{first, second} {
		ev := nextEvent(t, sm, socketmode.EventTypeEventsAPI)
		if ev.Request.EnvelopeID != want {
			t.Errorf("envelope %s arrived, want %s", ev.Request.EnvelopeID, want)
		}
	}
}

func TestRedeliverKeepsEventID(t *testing.T) {
	srv := newServer(t)
	sm := runSocketMode(t, srv)
	orig := srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> q", "", ""))
	first := nextEvent(t, sm, socketmode.EventTypeEventsAPI)

	again, err := srv.Redeliver(orig, "timeout")
	if err != nil {
		t.Fatal(err)
	}
	second := nextEvent(t, sm, socketmode.EventTypeEventsAPI)
	if second.Request.EnvelopeID != again || again == orig {
		t.Errorf("redelivered envelope %s, want new id %s", second.Request.EnvelopeID, again)
	}
	if second.Request.RetryAttempt != 1 || second.Request.RetryReason != "timeout" {
		t.Errorf("retry = %d %q", second.Request.RetryAttempt, second.Request.RetryReason)
	}
	id := func(ev socketmode.Event) string {
		return ev.Data.(slackevents.EventsAPIEvent).Data.(*slackevents.EventsAPICallbackEvent).EventID
	}
	if id(first) != id(second) {
		t.Errorf("event_id changed on redelivery: %s vs %s", id(first), id(second))
	}
	if _, err := srv.Redeliver("nope", "timeout"); err == nil {
		t.Error("Redeliver of an unknown envelope succeeded")
	}
}

func TestButtonClickArrivesAsInteractionCallback(t *testing.T) {
	srv := newServer(t)
	sm := runSocketMode(t, srv)
	api := srv.Client()
	stop := slack.NewButtonBlockElement("stop", "run-7", slack.NewTextBlockObject(slack.PlainTextType, "Stop", false, false))
	_, ts, err := api.PostMessageContext(t.Context(), "C1",
		slack.MsgOptionText("working", false),
		slack.MsgOptionBlocks(slack.NewActionBlock("controls", stop)),
		slack.MsgOptionTS("1700000000.000100"))
	if err != nil {
		t.Fatal(err)
	}

	envID := srv.ClickButton(slacktest.ButtonClick{
		User: "U1", Channel: "C1", MessageTS: ts, ThreadTS: "1700000000.000100",
		ActionID: "stop", BlockID: "controls", Value: "run-7", Text: "Stop",
	})
	ev := nextEvent(t, sm, socketmode.EventTypeInteractive)
	if ev.Request.EnvelopeID != envID || !ev.Request.AcceptsResponsePayload {
		t.Errorf("request = %+v", ev.Request)
	}
	cb, ok := ev.Data.(slack.InteractionCallback)
	if !ok {
		t.Fatalf("Data is %T, want slack.InteractionCallback", ev.Data)
	}
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "U1" || cb.Channel.ID != "C1" || cb.Container.MessageTs != ts || cb.Container.ThreadTs != "1700000000.000100" {
		t.Errorf("callback = %+v", cb)
	}
	if len(cb.ActionCallback.BlockActions) != 1 {
		t.Fatalf("block actions = %+v", cb.ActionCallback)
	}
	if a := cb.ActionCallback.BlockActions[0]; a.ActionID != "stop" || a.Value != "run-7" || a.BlockID != "controls" || a.Type != "button" {
		t.Errorf("action = %+v", a)
	}
	if cb.Message.Timestamp != ts || cb.Message.Text != "working" {
		t.Errorf("message = %+v, want the stored message", cb.Message.Msg)
	}

	// The response_url points back at the fake.
	if err := slack.PostWebhookContext(t.Context(), cb.ResponseURL, &slack.WebhookMessage{Text: "stopping", ReplaceOriginal: true}); err != nil {
		t.Fatal(err)
	}
	if calls := srv.Calls("response_url"); len(calls) != 1 || calls[0].Params.Get("text") != "stopping" {
		t.Errorf("response_url calls = %+v", calls)
	}
}

func TestUnparseableEnvelopesSurfaceAsBadMessages(t *testing.T) {
	srv := newServer(t)
	sm := connect(t, srv)

	tests := []struct {
		name string
		send func() string
	}{
		{"unknown inner event type", func() string {
			return srv.SendEvent(slacktest.InnerEvent("future_thing_happened", map[string]any{"channel": "C1"}))
		}},
		{"malformed block", func() string {
			return srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> x", "", "").
				With("blocks", json.RawMessage(`[{"type":"section","text":"not an object"}]`)))
		}},
		{"raw frame of an unknown envelope type", func() string {
			return srv.SendRaw([]byte(`{"envelope_id":"raw-1","type":"brand_new","payload":{}}`))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envID := tt.send()
			ev := nextEvent(t, sm, socketmode.EventTypeErrorBadMessage)
			if ev.Request != nil {
				t.Errorf("Request = %+v, want nil for a bad message", ev.Request)
			}
			bad := ev.Data.(*socketmode.ErrorBadMessage)
			var head struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if err := json.Unmarshal(bad.Message, &head); err != nil || head.EnvelopeID != envID {
				t.Fatalf("envelope_id in bad message = %q (%v), want %q", head.EnvelopeID, err, envID)
			}
			// What the bot must do: ack by the envelope_id from the raw frame.
			if err := sm.AckCtx(waitCtx(t), head.EnvelopeID, nil); err != nil {
				t.Fatal(err)
			}
			if ack, err := srv.WaitAck(waitCtx(t), envID); err != nil || !ack.Known {
				t.Errorf("ack = %+v, %v", ack, err)
			}
		})
	}
}

// TestEventsAPIEnvelopeFields pins the envelope to the fields Slack sends, so a bot
// tested against the fake parses what production delivers.
func TestEventsAPIEnvelopeFields(t *testing.T) {
	srv := newServer(t)
	srv.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> hi", "1700000005.000100", "1700000000.000100"))
	env := srv.Envelopes()[0]
	var frame struct {
		EnvelopeID             string         `json:"envelope_id"`
		Type                   string         `json:"type"`
		AcceptsResponsePayload *bool          `json:"accepts_response_payload"`
		RetryAttempt           *int           `json:"retry_attempt"`
		RetryReason            *string        `json:"retry_reason"`
		Payload                map[string]any `json:"payload"`
	}
	if err := json.Unmarshal(env.Frame, &frame); err != nil {
		t.Fatal(err)
	}
	if frame.EnvelopeID != env.ID || frame.Type != "events_api" || frame.AcceptsResponsePayload == nil || *frame.AcceptsResponsePayload || frame.RetryAttempt == nil || frame.RetryReason == nil {
		t.Errorf("envelope = %s", env.Frame)
	}
	for _, k := range []string{"token", "team_id", "api_app_id", "event", "type", "event_id", "event_time", "authorizations", "is_ext_shared_channel", "event_context"} {
		if _, ok := frame.Payload[k]; !ok {
			t.Errorf("payload lacks %q: %s", k, env.Frame)
		}
	}
	if frame.Payload["type"] != "event_callback" || frame.Payload["event_time"] != float64(1700000005) || frame.Payload["event_id"] != env.EventID {
		t.Errorf("payload = %v", frame.Payload)
	}
	ev := frame.Payload["event"].(map[string]any)
	want := map[string]any{"type": "app_mention", "user": "U1", "channel": "C1", "ts": "1700000005.000100", "event_ts": "1700000005.000100", "thread_ts": "1700000000.000100", "team": "T1", "text": "<@UBOT> hi"}
	for k, v := range want {
		if ev[k] != v {
			t.Errorf("event[%q] = %v, want %v", k, ev[k], v)
		}
	}
	if env.SentAt != (time.Time{}) || env.Conn != 0 {
		t.Errorf("envelope with no connection was stamped as sent: %+v", env)
	}
	// A test-chosen ts moves the clock: the next generated ts is later.
	if next := srv.NextTS(); next <= "1700000005.000100" {
		t.Errorf("NextTS = %s, want after the event's ts", next)
	}
}

func TestEchoBotPosts(t *testing.T) {
	srv := newServer(t, slacktest.WithEchoBotPosts())
	sm := connect(t, srv)
	tests := []struct {
		channel, threadTS, wantType string
	}{
		{"C1", "1700000000.000100", "channel"},
		{"D1", "", "im"},
	}
	for _, tt := range tests {
		t.Run(tt.channel, func(t *testing.T) {
			opts := []slack.MsgOption{slack.MsgOptionText("answer", false), slack.MsgOptionBlocks(slack.NewMarkdownBlock("", "answer"))}
			if tt.threadTS != "" {
				opts = append(opts, slack.MsgOptionTS(tt.threadTS))
			}
			_, ts, err := srv.Client().PostMessageContext(t.Context(), tt.channel, opts...)
			if err != nil {
				t.Fatal(err)
			}
			ev := nextEvent(t, sm, socketmode.EventTypeEventsAPI)
			m := ev.Data.(slackevents.EventsAPIEvent).InnerEvent.Data.(*slackevents.MessageEvent)
			if m.TimeStamp != ts || m.BotID != slacktest.DefaultBotID || m.User != slacktest.DefaultBotUserID || m.ChannelType != tt.wantType || m.ThreadTimeStamp != tt.threadTS || m.SubType != "" {
				t.Errorf("echo = %+v", m)
			}
			if err := sm.Ack(*ev.Request); err != nil {
				t.Fatal(err)
			}
		})
	}
	if n := len(srv.Messages()); n != 2 {
		t.Errorf("store holds %d messages, want 2 (echoes are not stored twice)", n)
	}
}

// BenchmarkEventAckRoundTrip measures one events_api envelope from SendEvent through
// the real slack-go client and its ack back to the fake. Waiters see a fresh snapshot
// after every change, so the cost grows with what was recorded; run it with
// -benchtime=200x, about the history of a long end-to-end test.
func BenchmarkEventAckRoundTrip(b *testing.B) {
	srv := newServer(b)
	sm := runSocketMode(b, srv)
	nextEvent(b, sm, socketmode.EventTypeHello)
	ctx := context.Background()
	ev := slacktest.AppMention("C1", "U1", "<@UBOT> q", "", "")
	for b.Loop() {
		envID := srv.SendEvent(ev)
		got := nextEvent(b, sm, socketmode.EventTypeEventsAPI)
		if err := sm.AckCtx(ctx, got.Request.EnvelopeID, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := srv.WaitAck(ctx, envID); err != nil {
			b.Fatal(err)
		}
	}
}

// Mention and Reply send what a person's messages produce, as slack-go
// parses them: a top-level app_mention naming the bot, then a message event
// in its thread, each at the ts they return.
func TestMentionAndReplyAsSlackSendsThem(t *testing.T) {
	srv := newServer(t)
	sm := connect(t, srv)

	inner := func() any {
		t.Helper()
		ev := nextEvent(t, sm, socketmode.EventTypeEventsAPI)
		if err := sm.Ack(*ev.Request); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		api, ok := ev.Data.(slackevents.EventsAPIEvent)
		if !ok {
			t.Fatalf("Data is %T, want slackevents.EventsAPIEvent", ev.Data)
		}
		return api.InnerEvent.Data
	}

	root := srv.Mention("C1", "U1", "where is main?", "")
	mention, ok := inner().(*slackevents.AppMentionEvent)
	if !ok {
		t.Fatal("the mention did not arrive as an app_mention")
	}
	if mention.Channel != "C1" || mention.User != "U1" || mention.Text != "<@UBOT> where is main?" ||
		mention.TimeStamp != root || mention.ThreadTimeStamp != "" {
		t.Errorf("mention = %+v, want a top-level <@UBOT> mention at %s", mention, root)
	}

	reply := srv.Reply("C1", "U2", "and the tests?", root)
	msg, ok := inner().(*slackevents.MessageEvent)
	if !ok {
		t.Fatal("the reply did not arrive as a message event")
	}
	if msg.Channel != "C1" || msg.ChannelType != "channel" || msg.User != "U2" || msg.Text != "and the tests?" ||
		msg.TimeStamp != reply || msg.ThreadTimeStamp != root || msg.SubType != "" {
		t.Errorf("reply = %+v, want a plain message at %s in thread %s", msg, reply, root)
	}
	if reply <= root { // same length: string order is time order
		t.Errorf("reply ts %s is not after the root's %s", reply, root)
	}

	srv.Reply("D1", "U1", "in a DM", "")
	if dm, ok := inner().(*slackevents.MessageEvent); !ok || dm.ChannelType != "im" || dm.ThreadTimeStamp != "" {
		t.Errorf("DM = %+v, want a top-level message of channel type im", dm)
	}
	for _, ts := range []string{root, reply} {
		if _, ok := srv.Message("C1", ts); !ok {
			t.Errorf("message %s is not in the store; conversations.replies would miss it", ts)
		}
	}
}
