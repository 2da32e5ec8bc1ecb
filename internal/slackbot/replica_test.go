package slackbot

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// Two bots in one process stand for two replicas: one fake Slack app with
// a connection each, one model server, one store whose leases and queues
// they share (session.Memory implements them as PostgreSQL does; the
// cmd/bot tests run real processes on PostgreSQL).

// testLeaseTTL is short so a lost lease is taken over within a test.
const testLeaseTTL = time.Second

type replicaPair struct {
	a, b  *harness
	connA int // connection IDs in the fake Slack
	connB int
}

// newReplicaPair starts two replicas; cfg, when set, adjusts each one's
// Config, in which Shared is the common store.
func newReplicaPair(t *testing.T, script func(llmtest.Request) llmtest.Reply, cfg func(name string, c *Config)) *replicaPair {
	t.Helper()
	srv := slacktest.New()
	t.Cleanup(srv.Close)
	ai := llmtest.New(t, script)
	store := session.NewMemory()
	start := func(name string) (*harness, int) {
		before := srv.LiveConns()
		h := newHarness(t, harnessOpts{slack: srv, ai: ai, store: store, cfg: func(c *Config) {
			c.Shared, c.Replica, c.LeaseTTL = store, name, testLeaseTTL
			if cfg != nil {
				cfg(name, c)
			}
		}})
		for _, id := range srv.LiveConns() {
			if !slices.Contains(before, id) {
				return h, id
			}
		}
		t.Fatalf("replica %s has no connection of its own", name)
		return nil, 0
	}
	p := &replicaPair{}
	p.a, p.connA = start("replica-a")
	p.b, p.connB = start("replica-b")
	return p
}

func (p *replicaPair) send(t *testing.T, conn int, ev slacktest.Event) {
	t.Helper()
	if _, err := p.a.slack.SendEventTo(conn, ev); err != nil {
		t.Fatal(err)
	}
}

// mention sends a new top-level mention of the bot with text in channel,
// on connection conn only, and returns the thread's root.
func (p *replicaPair) mention(t *testing.T, conn int, channel, text string) string {
	t.Helper()
	ts, err := p.a.slack.MentionTo(conn, channel, "U1", text, "")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// reply sends text as a reply in the thread root of channel, on
// connection conn only, and returns its ts.
func (p *replicaPair) reply(t *testing.T, conn int, channel, text, root string) string {
	t.Helper()
	ts, err := p.a.slack.ReplyTo(conn, channel, "U1", text, root)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// turnLines are the turn summaries both replicas logged.
func (p *replicaPair) turnLines() []map[string]any {
	return append(p.a.logLines("turn"), p.b.logLines("turn")...)
}

func (p *replicaPair) waitTurns(t *testing.T, n int) {
	t.Helper()
	ctx := p.a.ctx()
	for len(p.turnLines()) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %d turns, have %d", n, len(p.turnLines()))
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func outcomes(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		out = append(out, fmt.Sprint(l["outcome"]))
	}
	slices.Sort(out)
	return out
}

// The same event delivered to both replicas at once is answered once, and
// so is one message delivered as app_mention to one and message to the
// other.
func TestReplicasAnswerAnEventOnce(t *testing.T) {
	p := newReplicaPair(t, readThenAnswer, nil)
	root := p.a.slack.NextTS()
	if envs := p.a.slack.SendEventEach(slacktest.AppMention("C1", "U1", "<@UBOT> first?", root, "")); len(envs) != 2 {
		t.Fatalf("delivered to %d connections, want 2", len(envs))
	}
	root2 := p.mention(t, p.connA, "C2", "second?")
	p.send(t, p.connB, slacktest.UserMessage("C2", "channel", "U1", "<@UBOT> second?", root2, ""))
	p.waitTurns(t, 2)
	p.send(t, p.connA, slacktest.AppMention("C3", "U1", "<@UBOT> barrier", p.a.slack.NextTS(), ""))
	p.send(t, p.connB, slacktest.AppMention("C3", "U1", "<@UBOT> barrier 2", p.a.slack.NextTS(), ""))
	p.waitTurns(t, 4)

	for _, c := range []struct{ ch, ts string }{{"C1", root}, {"C2", root2}} {
		if n := len(answers(p.a.slack.Snapshot().BotMessages(c.ch, c.ts, slacktest.DefaultBotID))); n != 1 {
			t.Errorf("%s: %d answers, want 1", c.ch, n)
		}
	}
	if n := len(p.a.ai.Requests()); n != 8 {
		t.Errorf("model got %d requests, want 8 (two per question)", n)
	}
	if got := outcomes(p.turnLines()); !slices.Equal(got, []string{"answered", "answered", "answered", "answered"}) {
		t.Errorf("turn outcomes %v", got)
	}
	if n := len(p.a.logLines("event not answered")) + len(p.b.logLines("event not answered")); n != 2 {
		t.Errorf("%d events dropped as duplicates, want 2", n)
	}
}

// A follow-up that lands on the replica not running the thread waits,
// visibly, until the thread's turn is over, and is answered after it with
// the thread's memory; once the thread is idle, a follow-up on either
// replica is answered there with the whole history.
func TestReplicasKeepThreadOrderAndMemory(t *testing.T) {
	hold := newGate()
	p := newReplicaPair(t, heldAnswerTo("Q1", hold), nil)
	root := p.mention(t, p.connA, "C1", "Q1")
	waitQuestionAnswering(t, p.a, "Q1")

	q2 := p.reply(t, p.connB, "C1", "Q2", root)
	p.b.waitReaction("C1", q2, reactQueued)
	if slices.Contains(questions(p.a.ai.Requests()), "Q2") {
		t.Fatal("Q2 reached the model while Q1 was still running on the other replica")
	}
	hold.open()
	p.a.waitReaction("C1", q2, reactDone)

	// Idle: replica a let the thread go.
	key := session.Key{Team: "T1", Channel: "C1", Thread: root}
	ctx := p.a.ctx()
	for p.a.bot.rep.known(key) {
		select {
		case <-ctx.Done():
			t.Fatal("replica a never let the thread go")
		case <-time.After(time.Millisecond):
		}
	}
	q3 := p.reply(t, p.connB, "C1", "Q3", root)
	p.a.waitReaction("C1", q3, reactDone)
	p.waitTurns(t, 3)

	got := answers(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))
	if len(got) != 3 {
		t.Fatalf("%d answers, want 3: %q", len(got), allTexts(got))
	}
	for i, q := range []string{"Q1", "Q2", "Q3"} {
		if !strings.Contains(got[i].AllText(), "to: "+q) {
			t.Errorf("answer %d is %q, want the answer to %s", i, got[i].AllText(), q)
		}
	}
	if m, _ := p.a.slack.Message("C1", q2); slices.Contains(m.Reactions, reactQueued) {
		t.Errorf("queued sign still on Q2 after it ran: %v", m.Reactions)
	}
	reqs := p.a.ai.Requests()
	last := reqs[len(reqs)-1]
	for _, want := range []string{"Q1", "Answer** to: Q1", "Q2", "Answer** to: Q2", "Q3"} {
		if !slices.ContainsFunc(last.Chat.Messages, func(m llmtest.Message) bool { return strings.HasSuffix(strings.TrimSpace(m.Content), want) }) {
			t.Errorf("Q3's request has no message ending in %q: the thread's memory was lost", want)
		}
	}
	if n := len(p.b.logLines("turn")); n != 1 {
		t.Errorf("replica b ran %d turns, want 1 (Q3, which landed on it once the thread was idle)", n)
	}
}

// stallable is a replica's view of the shared store that can stop renewing
// its leases, as when a replica hangs or loses the database.
type stallable struct {
	Shared
	stalled atomic.Bool
}

func (s *stallable) RenewThread(ctx context.Context, key session.Key, owner string, ttl time.Duration) (bool, error) {
	if s.stalled.Load() {
		return false, errors.New("stalled")
	}
	return s.Shared.RenewThread(ctx, key, owner, ttl)
}

// A replica that stops renewing its lease mid-turn loses the thread: the
// other claims it once the lease expired, resumes the turn from its stored
// step and answers; the first, back, finds its lease gone, cuts its turn
// and posts nothing. One answer.
func TestReplicaTakesOverAThreadWhoseLeaseExpired(t *testing.T) {
	p, stall := stalledPair(t, UIMessages)
	root := p.mention(t, p.connA, "C1", "what is widget?")
	waitQuestionAnswering(t, p.a, "what is widget?")
	takeOver(t, p, stall, root)

	if got := outcomes(p.a.logLines("turn")); !slices.Equal(got, []string{outcomeTakenOver}) {
		t.Errorf("replica a's turn outcomes %v, want [%s]", got, outcomeTakenOver)
	}
	if got := outcomes(p.b.logLines("turn")); !slices.Equal(got, []string{outcomeAnswered}) {
		t.Errorf("replica b's turn outcomes %v, want [%s]", got, outcomeAnswered)
	}
	msgs := p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)
	if n := len(answers(msgs)); n != 1 {
		t.Errorf("%d answers, want 1: %q", n, allTexts(msgs))
	}
	reqs := p.a.ai.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3 (a's two, b's one to finish from the stored step)", len(reqs))
	}
	if reqs[2].Last().Role != "tool" {
		t.Errorf("b's request does not continue from a's stored step: last message %+v", reqs[2].Last())
	}
	if n := strings.Count(strings.Join(allTexts(msgs), "\n"), "picking it up where I left off"); n != 1 {
		t.Errorf("the thread was told %d times that the answer is being resumed, want once", n)
	}
}

// pausedAfterAnswer is a replica's store that, once it has stored a step
// ending in the answer, stops the replica's lease renewals and holds the
// turn there: the window between the last step and the answer's post.
type pausedAfterAnswer struct {
	session.Store
	stall  *stallable
	stored chan struct{}
	resume chan struct{}
}

func (s *pausedAfterAnswer) AppendStep(ctx context.Context, turnID string, msgs []llm.Message, usage llm.Usage) error {
	err := s.Store.AppendStep(ctx, turnID, msgs, usage)
	if last := msgs[len(msgs)-1]; err == nil && last.Role == llm.RoleAssistant && len(last.ToolCalls) == 0 {
		s.stall.stalled.Store(true)
		close(s.stored)
		<-s.resume
	}
	return err
}

// A replica whose lease lapses after it stored the answer but before it
// posted it leaves the answer to the replica that claimed the turn (which
// found the stored answer and posted it): one answer in the thread.
func TestReplicaLosingItsLeaseBeforePostingLeavesTheAnswerToTheOther(t *testing.T) {
	paused := &pausedAfterAnswer{stored: make(chan struct{}), resume: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-paused.resume:
		default:
			close(paused.resume)
		}
	})
	p := newReplicaPair(t, readThenAnswer, func(name string, c *Config) {
		if name != "replica-a" {
			return
		}
		paused.stall = &stallable{Shared: c.Shared}
		c.Shared = paused.stall
		paused.Store = c.Store
		c.Store = paused
	})
	root := p.mention(t, p.connA, "C1", "what is widget?")
	select {
	case <-paused.stored:
	case <-p.a.ctx().Done():
		t.Fatal("replica a never stored its answer step")
	}
	// Replica b claims the thread once a's lease expired and posts the
	// stored answer; then a, back, gets to its post.
	p.b.waitReaction("C1", root, reactDone)
	paused.stall.stalled.Store(false)
	close(paused.resume)
	ctx := p.a.ctx()
	for len(p.a.logLines("turn")) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("replica a never ended its turn")
		case <-time.After(2 * time.Millisecond):
		}
	}
	if got := outcomes(p.a.logLines("turn")); !slices.Equal(got, []string{outcomeTakenOver}) {
		t.Errorf("replica a's turn outcomes %v, want [%s]", got, outcomeTakenOver)
	}
	msgs := p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)
	if n := len(answers(msgs)); n != 1 {
		t.Errorf("%d answers, want 1: %q", n, allTexts(msgs))
	}
}

// A burst spread over both replicas: every question answered once.
func TestReplicasBurst(t *testing.T) {
	p := newReplicaPair(t, readThenAnswer, nil)
	const n = 20
	var roots []string
	for i := range n {
		root := p.a.slack.NextTS()
		roots = append(roots, root)
		conn := p.connA
		if i%2 == 1 {
			conn = p.connB
		}
		p.send(t, conn, slacktest.AppMention("C1", "U1", fmt.Sprintf("<@UBOT> question %d", i), root, ""))
	}
	p.waitTurns(t, n)
	for i, root := range roots {
		if got := len(answers(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))); got != 1 {
			t.Errorf("question %d: %d answers, want 1", i, got)
		}
	}
	if len(p.a.logLines("turn")) == 0 || len(p.b.logLines("turn")) == 0 {
		t.Errorf("turns by replica: a %d, b %d; want both to answer", len(p.a.logLines("turn")), len(p.b.logLines("turn")))
	}
}

// A replica that is stopped (SIGTERM) while it answers cuts the answer
// after its grace period and lets the thread go at once: another replica
// claims it without waiting for the lease to expire (the TTL here is far
// longer than the test), resumes the cut answer and answers the follow-up
// that was queued behind it, in order.
func TestReplicaStoppedHandsItsThreadOver(t *testing.T) {
	var held atomic.Int32
	p := newReplicaPair(t, func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if question(r) == "Q1" && r.Last().Role == "tool" && held.Add(1) == 1 {
			rep.Wait = make(chan struct{}) // replica a's answer to Q1 never comes
		}
		return rep
	}, func(name string, c *Config) {
		c.LeaseTTL, c.DrainTimeout = time.Hour, 100*time.Millisecond
	})
	root := p.mention(t, p.connA, "C1", "Q1")
	waitQuestionAnswering(t, p.a, "Q1")
	q2 := p.reply(t, p.connA, "C1", "Q2", root)
	p.a.waitReaction("C1", q2, reactQueued)

	if err := p.a.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	p.b.bot.rep.claim(p.b.ctx()) // its next look, without waiting half an hour
	p.b.waitReaction("C1", q2, reactDone)
	p.waitTurns(t, 3)

	got := answers(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))
	if len(got) != 2 || !strings.Contains(got[0].AllText(), "to: Q1") || !strings.Contains(got[1].AllText(), "to: Q2") {
		t.Fatalf("answers %q, want Q1's then Q2's", allTexts(got))
	}
	text := strings.Join(allTexts(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)), "\n")
	for _, want := range []string{noteWillResume, noteResuming} {
		if n := strings.Count(text, want); n != 1 {
			t.Errorf("the thread was told %q %d times, want once:\n%s", want, n, text)
		}
	}
	if got := outcomes(p.a.logLines("turn")); !slices.Equal(got, []string{outcomeInterrupted}) {
		t.Errorf("replica a's turn outcomes %v, want [%s]", got, outcomeInterrupted)
	}
	if got := outcomes(p.b.logLines("turn")); !slices.Equal(got, []string{outcomeAnswered, outcomeAnswered}) {
		t.Errorf("replica b's turn outcomes %v, want two answered", got)
	}
	if strings.Contains(text, "ask again") {
		t.Errorf("the thread was asked to ask again; the queued question is another replica's to answer:\n%s", text)
	}
}

// Slack delivers a Stop click to any of the app's connections. One that
// lands on the replica not running the turn is passed on through the
// store: the running replica stops the turn as if clicked there, and the
// thread hears who stopped it. A click on the ended turn does nothing.
func TestReplicasStopClickOnTheOtherReplica(t *testing.T) {
	hold := newGate()
	t.Cleanup(hold.open)
	p := newReplicaPair(t, heldAnswer(hold), nil)
	root := p.mention(t, p.connA, "C1", "a long question")
	waitQuestionAnswering(t, p.a, "a long question")
	progress := waitStopButton(t, p.a, root)
	// The turn's value in a click from another channel: refused on the
	// replica that gets it, the turn goes on.
	stray := stopClick("U7", "C2", "", progress)
	env, err := p.a.slack.ClickButtonTo(p.connB, stray)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.a.slack.WaitAck(p.a.ctx(), env); err != nil {
		t.Fatal(err)
	}
	for ctx := p.b.ctx(); len(p.b.logLines("stop click refused: it came from another channel than the turn's")) == 0; {
		select {
		case <-ctx.Done():
			t.Fatal("replica b never refused the click from another channel")
		case <-time.After(2 * time.Millisecond):
		}
	}
	if who, _ := p.a.store.StopRequested(p.a.ctx(), stray.Value); who != "" {
		t.Fatalf("a click from another channel asked to stop the turn (by %s)", who)
	}

	click := stopClick("U7", "C1", root, progress)
	env, err = p.a.slack.ClickButtonTo(p.connB, click)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.a.slack.WaitAck(p.a.ctx(), env); err != nil {
		t.Fatal(err)
	}
	lines := p.a.waitTurns(1)
	if lines[0]["outcome"] != outcomeStopped {
		t.Errorf("turn outcome %v, want stopped", lines[0]["outcome"])
	}
	msgs := p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)
	if len(msgs) != 2 || msgs[1].Text != "<@U7> stopped this answer." {
		t.Fatalf("thread after Stop = %q, want the progress and who stopped it", allTexts(msgs))
	}
	if stopValue(msgs[0]) != "" {
		t.Error("the Stop button is still shown after the turn ended")
	}
	turn, err := p.a.store.Turn(p.a.ctx(), click.Value)
	if err != nil || turn.State != session.TurnStopped {
		t.Errorf("stored turn = %+v, %v; want it stopped", turn, err)
	}
	if n := len(p.b.logLines("stop clicked for a turn running on another replica; passed on")); n != 1 {
		t.Errorf("replica b passed %d clicks on, want 1", n)
	}

	// A late click on the ended turn, on either replica: nothing happens.
	before := len(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))
	for _, conn := range []int{p.connB, p.connA} {
		env, err := p.a.slack.ClickButtonTo(conn, click)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.a.slack.WaitAck(p.a.ctx(), env); err != nil {
			t.Fatal(err)
		}
	}
	ctx := p.a.ctx()
	for len(p.b.logLines("stop clicked for a turn that is not running")) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("replica b never handled the late click")
		case <-time.After(2 * time.Millisecond):
		}
	}
	if after := len(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)); after != before {
		t.Errorf("a click on the ended turn posted %d messages", after-before)
	}
	if got := outcomes(p.turnLines()); !slices.Equal(got, []string{outcomeStopped}) {
		t.Errorf("turn outcomes %v, want one stopped", got)
	}
}

// A follow-up that lands on replica b while the thread's first question
// still waits on replica a (for a slot: a answers one question at a time
// here), with no turn of the thread stored yet, is taken as a question in
// a thread the bot is in: it waits behind the first, visibly, and is
// answered after it with the thread's memory.
func TestReplicasFollowUpBeforeTheFirstTurnIsStored(t *testing.T) {
	hold := newGate()
	t.Cleanup(hold.open)
	p := newReplicaPair(t, heldAnswerTo("Q0", hold), func(name string, c *Config) {
		if name == "replica-a" {
			c.MaxConcurrent = 1
		}
	})
	p.mention(t, p.connA, "C0", "Q0")
	waitQuestionAnswering(t, p.a, "Q0") // replica a's only slot is taken

	root := p.mention(t, p.connA, "C1", "Q1")
	p.a.waitReaction("C1", root, reactQueued)
	key := session.Key{Team: "T1", Channel: "C1", Thread: root}
	if _, ok, _ := p.a.store.Session(p.a.ctx(), key); ok {
		t.Fatal("Q1's session is stored already; the case needs a thread with none")
	}

	q2 := p.reply(t, p.connB, "C1", "Q2", root)
	ctx := p.a.ctx()
	for {
		if m, _ := p.a.slack.Message("C1", q2); slices.Contains(m.Reactions, reactQueued) {
			break
		}
		if lines := p.b.logLines("event not answered"); len(lines) > 0 {
			t.Fatalf("replica b ignored the follow-up: %v", lines)
		}
		select {
		case <-ctx.Done():
			t.Fatal("the follow-up on replica b was never queued")
		case <-time.After(2 * time.Millisecond):
		}
	}

	hold.open()
	p.a.waitReaction("C1", q2, reactDone)
	p.waitTurns(t, 3)
	got := answers(p.a.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))
	if len(got) != 2 || !strings.Contains(got[0].AllText(), "to: Q1") || !strings.Contains(got[1].AllText(), "to: Q2") {
		t.Fatalf("answers %q, want Q1's then Q2's", allTexts(got))
	}
	var q2req *llmtest.Request
	for _, r := range p.a.ai.Requests() {
		if question(r) == "Q2" {
			q2req = &r
			break
		}
	}
	if q2req == nil {
		t.Fatal("Q2 never reached the model")
	}
	for _, want := range []string{"Q1", "Answer** to: Q1"} {
		if !slices.ContainsFunc(q2req.Chat.Messages, func(m llmtest.Message) bool { return strings.HasSuffix(strings.TrimSpace(m.Content), want) }) {
			t.Errorf("Q2's request has no message ending in %q: the thread's memory was lost", want)
		}
	}
	if n := len(p.b.logLines("turn")); n != 0 {
		t.Errorf("replica b ran %d turns, want 0: the thread was replica a's", n)
	}
}

// A replica that acked a question and died before queuing it leaves it in
// the store's inbox; the other replica claims it once the dead one's hold
// has passed, and answers it once.
func TestReplicaDiedAfterAckTheOtherAnswers(t *testing.T) {
	crashed := make(chan struct{})
	var once atomic.Bool
	p := newReplicaPair(t, readThenAnswer, func(name string, c *Config) {
		if name != "replica-a" {
			return
		}
		c.CrashAt = func(point string) {
			if point == CrashAfterAck && once.CompareAndSwap(false, true) {
				close(crashed)
				runtime.Goexit() // the read loop dies with the event acked and recorded
			}
		}
	})
	root := p.a.slack.NextTS()
	env, err := p.a.slack.SendEventTo(p.connA, slacktest.AppMention("C1", "U1", "<@UBOT> who answers?", root, ""))
	if err != nil {
		t.Fatal(err)
	}
	<-crashed
	if _, err := p.a.slack.WaitAck(p.a.ctx(), env); err != nil {
		t.Fatalf("the event was not acked: %v", err)
	}
	if err := p.a.stop(); err != nil {
		t.Fatal(err)
	}
	p.waitTurns(t, 1)
	if n := len(answers(p.b.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))); n != 1 {
		t.Errorf("%d answers, want 1", n)
	}
	if n := len(p.b.logLines("answering an event a stopped process received")); n != 1 {
		t.Errorf("replica b claimed the event %d times, want once", n)
	}
	if got := outcomes(p.turnLines()); !slices.Equal(got, []string{"answered"}) {
		t.Errorf("turn outcomes %v, want one answered", got)
	}
}
