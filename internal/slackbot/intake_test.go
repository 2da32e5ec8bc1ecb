package slackbot

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack/slackevents"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// At shutdown Run cancels the intake's context while acked events may still
// be queued for admission. They are admitted all the same: a follow-up in a
// thread with a session reaches the dispatcher, whose reject tells the
// thread to ask again, instead of failing its store look-ups on the
// cancelled context and being dropped as "no session".
func TestAdmitAfterShutdownStillQueuesFollowUp(t *testing.T) {
	st, err := session.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "s.db"), session.SQLiteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key := session.Key{Team: "T1", Channel: "C1", Thread: "100.000100"}
	if err := st.StartTurn(context.Background(), session.Turn{ID: "t1", Key: key, State: session.TurnRunning, MsgTS: key.Thread, Started: time.Now()}, "r", llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	if err := st.EndTurn(context.Background(), "t1", session.TurnDone, ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		ts       string
		shutdown bool // intake context cancelled and dispatcher closed
	}{
		{"running", "100.000300", false},
		{"shutting down", "100.000400", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(Config{BotToken: slacktest.DefaultBotToken, AppToken: slacktest.DefaultAppToken, Repos: newTestRepos(t, nil), Turns: idleTurns(t, st), Store: st}) // these tests stop at the dispatcher
			if err != nil {
				t.Fatal(err)
			}
			b.self = identity{UserID: "UBOT", TeamID: "T1"}
			var mu sync.Mutex
			var ran, rejected []string
			b.queue.run = func(j *job) { mu.Lock(); ran = append(ran, j.in.TS); mu.Unlock() }
			b.queue.reject = func(j *job) { mu.Lock(); rejected = append(rejected, j.in.TS); mu.Unlock() }
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.shutdown {
				cancel()
				b.queue.close()
			}
			qe, ok := b.receive(ctx, slackevents.EventsAPIEvent{
				TeamID: "T1",
				Data:   &slackevents.EventsAPICallbackEvent{EventID: "Ev" + tc.ts, TeamID: "T1"},
				InnerEvent: slackevents.EventsAPIInnerEvent{Type: "message", Data: &slackevents.MessageEvent{
					Channel: "C1", ChannelType: "channel", User: "U1", Text: "and then?", TimeStamp: tc.ts, ThreadTimeStamp: key.Thread,
				}},
			}, 0)
			if !ok || qe.key == "" {
				t.Fatalf("receive = %+v, %v; want the follow-up recorded", qe, ok)
			}
			b.admit(ctx, qe)
			b.queue.close()
			b.queue.wait()
			mu.Lock()
			defer mu.Unlock()
			// Running, the job may start or be rejected by the close
			// below; either way it reached the dispatcher.
			reached := append(append([]string(nil), ran...), rejected...)
			if tc.shutdown {
				reached = rejected
			}
			if len(reached) != 1 || reached[0] != tc.ts {
				t.Errorf("follow-up %s: run %v, rejected %v; want it to reach the dispatcher (rejected at shutdown, which tells the thread to ask again)", tc.ts, ran, rejected)
			}
		})
	}
}

// downInbox is a store whose inbox cannot record anything.
type downInbox struct{ *session.Memory }

func (downInbox) Receive(context.Context, string, []byte, string, time.Duration, time.Duration) (bool, error) {
	return false, errors.New("the database is not answering")
}

// An event the store cannot record is still acked (unacked, Slack would
// redeliver it to the same store), answered from memory, and counted.
func TestEventAckedAndAnsweredWhenTheStoreCannotRecordIt(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: func(c *Config) { c.Store = downInbox{c.Store.(*session.Memory)} }})
	root := h.slack.NextTS()
	env := h.slack.SendEvent(slacktest.AppMention("C1", "U1", "<@UBOT> what does this repo do?", root, ""))
	if _, err := h.slack.WaitAck(h.ctx(), env); err != nil {
		t.Fatalf("the event was not acked: %v", err)
	}
	h.waitReaction("C1", root, reactDone)
	if m := h.metrics(); !strings.Contains(m, "askrepo_events_unrecorded_total 1") {
		t.Errorf("metrics lack the unrecorded event:\n%s", grepLines(m, "unrecorded"))
	}
	if n := len(h.logLines("record an event before acking it; answering it from memory, a crash before it is handed on loses it")); n != 1 {
		t.Errorf("logged the failed record %d times, want once", n)
	}
}

// downPing is a store whose ping fails as a driver's would, naming the
// database's user and host.
type downPing struct{ *session.Memory }

func (downPing) Ping(context.Context) error {
	return errors.New(`failed to connect to user=askrepo database=askrepo: 10.1.2.3:5432 (db.internal): dial error`)
}

// /healthz answers anyone who reaches the port: a store that does not
// answer makes it unhealthy with a sentence, and the driver's words, which
// can name the database's user and host, go to the log only.
func TestHealthzKeepsTheStoreErrorInTheLog(t *testing.T) {
	h := newHarness(t, harnessOpts{cfg: func(c *Config) { c.Store = downPing{c.Store.(*session.Memory)} }})
	ctx := h.ctx()
	code, body := h.healthz()
	for strings.Contains(body, "not connected") {
		select {
		case <-ctx.Done():
			t.Fatal("the bot never connected")
		case <-time.After(2 * time.Millisecond):
		}
		code, body = h.healthz()
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "the session store does not answer") {
		t.Errorf("healthz = %d %s, want 503 saying the store does not answer", code, body)
	}
	for _, leak := range []string{"user=askrepo", "db.internal", "10.1.2.3"} {
		if strings.Contains(body, leak) {
			t.Errorf("healthz shows %q:\n%s", leak, body)
		}
	}
	if n := len(h.logLines("health check: the session store does not answer")); n == 0 {
		t.Error("the cause was not logged")
	}
}
