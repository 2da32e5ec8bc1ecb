package slacktest_test

import (
	"slices"
	"testing"

	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// twoClients connects two Socket Mode clients of one app to srv, one after
// the other, and returns them with their connections, in that order.
func twoClients(t *testing.T, srv *slacktest.Server) (sm1, sm2 *socketmode.Client, conns []int) {
	t.Helper()
	sm1 = runSocketMode(t, srv)
	if err := srv.WaitConnected(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	sm2 = runSocketMode(t, srv)
	if err := srv.WaitConnected(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	return sm1, sm2, srv.LiveConns()
}

// Two clients of one app: SendEventEach gives each the same event_id in an
// envelope of its own, SendEventTo reaches only the connection it names,
// and a connection that is gone is an error, not a silent reroute.
func TestRoutingToConnections(t *testing.T) {
	srv := newServer(t)
	sm1, sm2, conns := twoClients(t, srv)
	if len(conns) != 2 {
		t.Fatalf("LiveConns = %v, want two", conns)
	}
	eventID := func(ev socketmode.Event) string {
		return ev.Data.(slackevents.EventsAPIEvent).Data.(*slackevents.EventsAPICallbackEvent).EventID
	}

	envs := srv.SendEventEach(slacktest.AppMention("C1", "U1", "<@UBOT> both", "", ""))
	if len(envs) != 2 || envs[0] == envs[1] {
		t.Fatalf("SendEventEach envelopes = %v, want two distinct", envs)
	}
	e1, e2 := nextEvent(t, sm1, socketmode.EventTypeEventsAPI), nextEvent(t, sm2, socketmode.EventTypeEventsAPI)
	if eventID(e1) != eventID(e2) || eventID(e1) == "" {
		t.Errorf("event_ids %q and %q, want one and the same", eventID(e1), eventID(e2))
	}
	if got := []string{e1.Request.EnvelopeID, e2.Request.EnvelopeID}; !slices.Equal(got, envs) {
		t.Errorf("envelopes by connection = %v, want %v", got, envs)
	}
	if n := len(srv.Thread("C1", srv.Messages()[0].TS)); n != 1 {
		t.Errorf("the message is stored %d times, want once", n)
	}

	for _, tc := range []struct {
		conn int
		sm   *socketmode.Client
	}{{conns[1], sm2}, {conns[0], sm1}, {conns[1], sm2}} {
		env, err := srv.SendEventTo(tc.conn, slacktest.AppMention("C1", "U1", "<@UBOT> one", "", ""))
		if err != nil {
			t.Fatal(err)
		}
		if got := nextEvent(t, tc.sm, socketmode.EventTypeEventsAPI); got.Request.EnvelopeID != env {
			t.Errorf("connection %d got envelope %s, want %s", tc.conn, got.Request.EnvelopeID, env)
		}
		st := srv.Snapshot()
		if e := st.Envelopes[len(st.Envelopes)-1]; e.Conn != tc.conn {
			t.Errorf("envelope %s went to connection %d, want %d", env, e.Conn, tc.conn)
		}
	}

	if _, err := srv.SendEventTo(99, slacktest.AppMention("C1", "U1", "<@UBOT> nobody", "", "")); err == nil {
		t.Error("SendEventTo an unknown connection succeeded")
	}
}

// MentionTo and ReplyTo send what Mention and Reply send, on the one
// connection they name; an unknown connection is an error.
func TestMentionAndReplyToOneConnection(t *testing.T) {
	srv := newServer(t)
	sm1, sm2, conns := twoClients(t, srv)
	inner := func(sm *socketmode.Client) any {
		t.Helper()
		return nextEvent(t, sm, socketmode.EventTypeEventsAPI).Data.(slackevents.EventsAPIEvent).InnerEvent.Data
	}

	root, err := srv.MentionTo(conns[1], "C1", "U1", "first?", "")
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := inner(sm2).(*slackevents.AppMentionEvent); !ok || m.Text != "<@UBOT> first?" || m.TimeStamp != root || m.ThreadTimeStamp != "" {
		t.Errorf("connection 2 got %+v, want the top-level mention at %s", m, root)
	}
	reply, err := srv.ReplyTo(conns[0], "C1", "U1", "and then?", root)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := inner(sm1).(*slackevents.MessageEvent); !ok || m.Text != "and then?" || m.TimeStamp != reply || m.ThreadTimeStamp != root || m.ChannelType != "channel" {
		t.Errorf("connection 1 got %+v, want the reply at %s in thread %s", m, reply, root)
	}
	if st := srv.Snapshot(); st.Envelopes[0].Conn != conns[1] || st.Envelopes[1].Conn != conns[0] {
		t.Errorf("envelopes went to connections %d and %d, want %d and %d", st.Envelopes[0].Conn, st.Envelopes[1].Conn, conns[1], conns[0])
	}
	if _, err := srv.MentionTo(99, "C1", "U1", "nobody?", ""); err == nil {
		t.Error("MentionTo an unknown connection succeeded")
	}
	if _, err := srv.ReplyTo(99, "C1", "U1", "nobody?", root); err == nil {
		t.Error("ReplyTo an unknown connection succeeded")
	}
}
