package slacktest_test

import (
	"slices"
	"testing"

	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// Two clients of one app: SendEventEach gives each the same event_id in an
// envelope of its own, SendEventTo reaches only the connection it names,
// and a connection that is gone is an error, not a silent reroute.
func TestRoutingToConnections(t *testing.T) {
	srv := newServer(t)
	sm1 := runSocketMode(t, srv)
	if err := srv.WaitConnected(waitCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	sm2 := runSocketMode(t, srv)
	if err := srv.WaitConnected(waitCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	conns := srv.LiveConns()
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
