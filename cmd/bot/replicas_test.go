package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// The replica tests run real bot processes on one PostgreSQL schema (a
// fresh one per test, dropped after it) and one fake Slack app, as a
// deployment of several replicas does.

// replicaLeaseTTL is short so a killed replica's thread moves within a test.
const replicaLeaseTTL = "2s"

type replicaWorld struct {
	*world
	db *pgx.Conn // on the test's schema
}

// newReplicaWorld needs ASKREPO_TEST_POSTGRES, which .ci/run sets after it
// starts a PostgreSQL server; without it the test skips and says so, or
// fails under CI, where a skip would pass unseen.
func newReplicaWorld(t *testing.T) *replicaWorld {
	dsn := os.Getenv("ASKREPO_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but ASKREPO_TEST_POSTGRES is not: the replica tests would be skipped; .ci/run starts a server and sets it")
		}
		t.Skip("set ASKREPO_TEST_POSTGRES=postgres://user:password@127.0.0.1:5432/db?sslmode=disable to run the replica tests against a real PostgreSQL (see .ci/run)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "askrepo_replicas_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to ASKREPO_TEST_POSTGRES: %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	admin.Close(ctx)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	store := dsn + sep + "search_path=" + schema // pgx sends unknown URL parameters as run-time settings
	w := &replicaWorld{world: newWorld(t, "BOT_STORE="+store, "BOT_LEASE_TTL="+replicaLeaseTTL)}
	// The bots run their cleanups (kill) before this closes: cleanups run last first.
	db, err := pgx.Connect(ctx, store)
	if err != nil {
		t.Fatalf("connect to the test schema: %v", err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	w.db = db
	return w
}

// startReplica starts a bot with a data dir (and so checkouts) of its own
// and returns it with the ID of its Socket Mode connection in the fake.
func (w *replicaWorld) startReplica() (*proc, int) {
	w.t.Helper()
	before := w.slack.LiveConns()
	env := w.env
	w.env = append(slices.Clip(env), "BOT_DATA_DIR="+w.t.TempDir()) // the last value wins
	p := w.start()
	w.env = env
	// On a loaded machine the first connection may drop and be replaced
	// just after the bot logs it: wait a while for the live one.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, id := range w.slack.LiveConns() {
			if !slices.Contains(before, id) {
				return p, id
			}
		}
	}
	w.t.Fatalf("the new replica has no connection of its own:\n%s", p.logs.String())
	return nil, 0
}

func (w *replicaWorld) sendTo(conn int, ev slacktest.Event) {
	w.t.Helper()
	if _, err := w.slack.SendEventTo(conn, ev); err != nil {
		w.t.Fatal(err)
	}
}

// mentionOn sends a new top-level mention of the bot with text in C1 to
// connection conn only (to one replica), and returns the thread's root.
func (w *replicaWorld) mentionOn(conn int, text string) string {
	w.t.Helper()
	root, err := w.slack.MentionTo(conn, "C1", "U1", text, "")
	if err != nil {
		w.t.Fatal(err)
	}
	return root
}

// heldOnA starts replicas a and b and asks a question in a new thread on
// a's connection, with a model that holds its answer after the turn's
// tool step; it returns once that step is stored and the answer asked for,
// with b's connection and the thread's root.
func (w *replicaWorld) heldOnA() (a, b *proc, connB int, root string) {
	w.t.Helper()
	w.model.setScript(holdAfterTools)
	a, connA := w.startReplica()
	b, connB = w.startReplica()
	root = w.mentionOn(connA, "what does widget do?")
	w.waitModelRequests(2)
	return a, b, connB, root
}

// answersIn counts the bot's answers (messages with a markdown block) in a
// thread of channel.
func (w *replicaWorld) answersIn(channel, root string) int {
	n := 0
	for _, m := range w.slack.Snapshot().BotMessages(channel, root, slacktest.DefaultBotID) {
		if slices.Contains(m.BlockTypes(), "markdown") {
			n++
		}
	}
	return n
}

// waitCount waits until the logs of procs hold n lines containing s.
func (w *replicaWorld) waitCount(s string, n int, procs ...*proc) {
	w.t.Helper()
	ctx := w.ctx()
	for countIn(s, procs...) < n {
		select {
		case <-ctx.Done():
			w.t.Fatalf("%d log lines with %q, want %d", countIn(s, procs...), s, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func countIn(s string, procs ...*proc) int {
	n := 0
	for _, p := range procs {
		n += strings.Count(p.logs.String(), s)
	}
	return n
}

// waitIdle waits until no replica holds a thread lease.
func (w *replicaWorld) waitIdle() {
	w.t.Helper()
	ctx := w.ctx()
	for {
		var n int
		if err := w.db.QueryRow(ctx, "SELECT count(*) FROM leases").Scan(&n); err != nil {
			w.t.Fatalf("count leases: %v", err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			w.t.Fatalf("%d thread leases still held", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// The same event delivered to both replicas' connections at once is
// answered once.
func TestReplicasAnswerAnEventDeliveredToBothOnce(t *testing.T) {
	w := newReplicaWorld(t)
	a, connA := w.startReplica()
	b, connB := w.startReplica()

	root := w.slack.NextTS()
	ev := slacktest.AppMention("C1", "U1", "<@UBOT> what does widget do?", root, "")
	ev.EventID = "EvBoth"
	if envs := w.slack.SendEventEach(ev); len(envs) != 2 {
		t.Fatalf("delivered to %d connections, want 2", len(envs))
	}
	w.waitAnswers(root, 1)
	// One more question on each connection: once both are answered, both
	// replicas are past the duplicate.
	for _, conn := range []int{connA, connB} {
		w.sendTo(conn, slacktest.AppMention("C1", "U1", "<@UBOT> barrier", w.slack.NextTS(), ""))
	}
	w.waitCount(`"outcome":"answered"`, 3, a, b)
	w.waitCount(`"reason":"duplicate"`, 1, a, b)

	if got := w.answersIn("C1", root); got != 1 {
		t.Errorf("answers = %d, want 1:\n%s", got, w.threadText(root))
	}
	if n := len(w.model.Requests()); n != 6 {
		t.Errorf("model requests = %d, want 6 (two per question)", n)
	}
	for _, p := range []*proc{a, b} {
		if code := p.stop(t, syscall.SIGTERM); code != 0 {
			t.Errorf("exit code after SIGTERM = %d, want 0", code)
		}
	}
}

// A burst of 50 mentions spread over both replicas: 50 answers, none
// doubled, both replicas answering.
func TestReplicasBurstOfFifty(t *testing.T) {
	w := newReplicaWorld(t)
	a, connA := w.startReplica()
	b, connB := w.startReplica()

	const n = 50
	type question struct{ channel, root string }
	var qs []question
	for i := range n {
		// Two questions per channel: Slack paces posts per channel, and
		// so does the bot.
		q := question{channel: fmt.Sprintf("C%02d", i/2), root: w.slack.NextTS()}
		qs = append(qs, q)
		conn := connA
		if i%2 == 1 {
			conn = connB
		}
		w.sendTo(conn, slacktest.AppMention(q.channel, "U1", fmt.Sprintf("<@UBOT> question %d", i), q.root, ""))
	}
	w.waitCount(`"outcome":"answered"`, n, a, b)

	for i, q := range qs {
		if got := w.answersIn(q.channel, q.root); got != 1 {
			t.Errorf("question %d: %d answers, want 1", i, got)
		}
	}
	if na, nb := countIn(`"msg":"turn"`, a), countIn(`"msg":"turn"`, b); na+nb != n || na == 0 || nb == 0 {
		t.Errorf("turns: replica a %d, b %d; want %d in all, some on each", na, nb, n)
	}
	if got := len(w.model.Requests()); got != 2*n {
		t.Errorf("model requests = %d, want %d (two per question)", got, 2*n)
	}
}

// A replica killed mid-turn: once its lease expired, the other replica
// claims the thread, resumes the turn from its stored step and answers,
// once.
func TestReplicaKilledMidTurnIsResumedByTheOther(t *testing.T) {
	w := newReplicaWorld(t)
	a, b, _, root := w.heldOnA() // step 1 (read README.md) is stored; step 2 hangs
	w.model.setScript(readmeThenAnswer)
	killed := time.Now()
	if code := a.stop(t, syscall.SIGKILL); code != -int(syscall.SIGKILL) {
		t.Fatalf("exit code = %d, want killed", code)
	}

	w.waitAnswers(root, 1)
	took := time.Since(killed)
	w.waitLog(b, `"outcome":"answered"`)
	if !strings.Contains(b.logs.String(), `"msg":"claimed a thread from a replica that stopped renewing its lease"`) {
		t.Errorf("replica b did not log its claim of the thread")
	}
	if ttl, _ := time.ParseDuration(replicaLeaseTTL); took > 3*ttl {
		t.Errorf("the thread was answered %s after the kill, want within a few lease TTLs (%s)", took, replicaLeaseTTL)
	}
	if code := b.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	if got := w.answersIn("C1", root); got != 1 {
		t.Errorf("answers = %d, want 1:\n%s", got, w.threadText(root))
	}
	if n := strings.Count(w.threadText(root), "I am picking it up where I left off"); n != 1 {
		t.Errorf("the thread was told %d times that the answer is being resumed, want once:\n%s", n, w.threadText(root))
	}
	reqs := w.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3 (two before the kill, one to finish)", len(reqs))
	}
	if r := reqs[2]; r.Last().Role != "tool" || r.Has("tool", "Widget turns sprockets into widgets.") != 1 || r.Has("user", "what does widget do?") != 1 {
		t.Errorf("the resumed request does not continue from step 1 with its result once: %+v", r.Chat.Messages)
	}
}

// A follow-up that lands on the other replica is answered with the
// thread's memory: the first question and its answer are in its request.
func TestReplicaFollowUpOnTheOtherKeepsMemory(t *testing.T) {
	w := newReplicaWorld(t)
	a, connA := w.startReplica()
	b, connB := w.startReplica()

	root := w.mentionOn(connA, "what does widget do?")
	w.waitAnswers(root, 1)
	w.waitLog(a, `"outcome":"answered"`)
	w.waitIdle()

	if _, err := w.slack.ReplyTo(connB, "C1", "U1", "and how are sprockets made?", root); err != nil {
		t.Fatal(err)
	}
	w.waitAnswers(root, 2)
	w.waitLog(b, `"outcome":"answered"`)
	if n := countIn(`"outcome":"answered"`, a); n != 1 {
		t.Errorf("replica a answered %d turns, want 1 (the follow-up is b's)", n)
	}
	reqs := w.model.Requests()
	last := reqs[len(reqs)-1]
	for _, want := range [][2]string{{"user", "what does widget do?"}, {"assistant", "Answer to: what does widget do?"}, {"user", "and how are sprockets made?"}} {
		if last.Has(want[0], want[1]) != 1 {
			t.Errorf("the follow-up's request has %d %s messages with %q, want 1: the thread was forgotten", last.Has(want[0], want[1]), want[0], want[1])
		}
	}
	if got := w.answersIn("C1", root); got != 2 {
		t.Errorf("answers = %d, want 2", got)
	}
}

// A Stop click that Slack delivers to the replica not running the answer
// stops it all the same: the click goes through PostgreSQL to the replica
// running it, which says who stopped it.
func TestReplicaStopClickOnTheOtherStopsTheAnswer(t *testing.T) {
	w := newReplicaWorld(t)
	a, b, connB, root := w.heldOnA() // step 2 hangs until the turn is cancelled
	var progress slacktest.Message
	var turnID string
	if _, err := w.slack.WaitFor(w.ctx(), func(st *slacktest.State) bool {
		for _, m := range st.BotMessages("C1", root, slacktest.DefaultBotID) {
			if id := buttonValue(m, "askrepo_stop"); id != "" {
				progress, turnID = m, id
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no Stop button in the thread:\n%s", w.threadText(root))
	}
	env, err := w.slack.ClickButtonTo(connB, slacktest.ButtonClick{
		User: "U7", Channel: "C1", MessageTS: progress.TS, ThreadTS: root,
		ActionID: "askrepo_stop", BlockID: "askrepo_stop", Value: turnID, Text: "Stop",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.slack.WaitAck(w.ctx(), env); err != nil {
		t.Fatal(err)
	}
	w.waitLog(a, `"outcome":"stopped"`)
	w.waitLog(b, `"msg":"stop clicked for a turn running on another replica; passed on"`)
	if !strings.Contains(w.threadText(root), "<@U7> stopped this answer.") {
		t.Errorf("the thread does not say who stopped the answer:\n%s", w.threadText(root))
	}
	var state string
	if err := w.db.QueryRow(w.ctx(), "SELECT state FROM turns WHERE id = $1", turnID).Scan(&state); err != nil || state != "stopped" {
		t.Errorf("stored turn state = %q, %v; want stopped", state, err)
	}
	if n := countIn(`"msg":"turn"`, b); n != 0 {
		t.Errorf("replica b ran %d turns, want 0", n)
	}
}

// buttonValue is the value of the button with actionID in m, "" if none.
func buttonValue(m slacktest.Message, actionID string) string {
	for _, b := range m.Blocks {
		els, _ := b["elements"].([]any)
		for _, e := range els {
			if el, ok := e.(map[string]any); ok && el["action_id"] == actionID {
				v, _ := el["value"].(string)
				return v
			}
		}
	}
	return ""
}

// A replica killed right after it acked a question, before it queued it:
// the question was recorded first, and the other replica answers it once
// the dead one's hold on it has passed.
func TestReplicaKilledAfterAckIsAnsweredByTheOther(t *testing.T) {
	w := newReplicaWorld(t)
	env := w.env
	w.env = append(slices.Clip(env), "ASKREPO_TEST_CRASH_AT=after-ack")
	a, connA := w.startReplica()
	w.env = env
	b, _ := w.startReplica()

	root := w.slack.NextTS()
	envelope, err := w.slack.SendEventTo(connA, slacktest.AppMention("C1", "U1", "<@UBOT> what does widget do?", root, ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.slack.WaitAck(w.ctx(), envelope); err != nil {
		t.Fatalf("the event was not acked: %v", err)
	}
	if code := a.waitExit(t); code != -int(syscall.SIGKILL) {
		t.Fatalf("exit code = %d, want SIGKILL at the crash point\n%s", code, a.logs.String())
	}
	w.waitAnswers(root, 1)
	w.waitLog(b, `"outcome":"answered"`)
	if !strings.Contains(b.logs.String(), `"msg":"answering an event a stopped process received"`) {
		t.Errorf("replica b did not log its claim of the event")
	}
	if code := b.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	if got := w.answersIn("C1", root); got != 1 {
		t.Errorf("answers = %d, want 1:\n%s", got, w.threadText(root))
	}
	if n := len(w.model.Requests()); n != 2 {
		t.Errorf("model requests = %d, want 2", n)
	}
}

// A replica killed between two parts of a long answer: the other replica
// claims the thread once the lease expired and posts the parts not yet
// posted, once each.
func TestReplicaKilledBetweenPartsTheOtherPostsTheRest(t *testing.T) {
	w := newReplicaWorld(t)
	w.model.setScript(longAnswer)
	env := w.env
	w.env = append(slices.Clip(env), "ASKREPO_TEST_CRASH_AT=between-parts")
	a, connA := w.startReplica()
	w.env = env
	b, _ := w.startReplica()

	root := w.mentionOn(connA, "what does widget do?")
	if code := a.waitExit(t); code != -int(syscall.SIGKILL) {
		t.Fatalf("exit code = %d, want SIGKILL at the crash point\n%s", code, a.logs.String())
	}
	w.waitAnswers(root, 3)
	w.waitLog(b, `"outcome":"answered"`)
	if code := b.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	checkParts(t, w.answers(root), "alpha", "bravo", "charlie")
	if n := len(w.model.Requests()); n != 2 {
		t.Errorf("model requests = %d, want 2 (the answer is in the store)", n)
	}
}
