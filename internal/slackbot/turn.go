package slackbot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/turn"

	"github.com/askrepo/askrepo/internal/slackbot/render"
)

// stopActionID is the action_id of the Stop button; its value is the turn id.
const stopActionID = "askrepo_stop"

// Reactions on the question: received and waiting, working, answered.
const (
	reactQueued  = "hourglass_flowing_sand"
	reactWorking = "eyes"
	reactDone    = "white_check_mark"
	reactFailed  = "warning"
)

// Causes of a turn's cancellation, told apart with context.Cause.
var (
	errShutdown    = errors.New("the service is shutting down")
	errTurnTimeout = errors.New("turn timeout")
	// errTakenOver means another process continued this turn (see
	// Store.ContinueTurn), or, with replicas, took the thread's lease: its
	// answer is theirs to post. The runner says the same with it when the
	// store refuses the turn's steps.
	errTakenOver = turn.ErrTakenOver
)

// stoppedBy is the cancellation cause of a turn stopped with the button.
type stoppedBy struct{ user string }

func (s *stoppedBy) Error() string { return "stopped by " + s.user }

// runningTurn is what the Stop button reaches.
type runningTurn struct {
	once   sync.Once
	cancel context.CancelCauseFunc
	// channel is where the turn's thread is; a click from anywhere else
	// is not for this turn, whatever value it carries. thread is the
	// thread, which an agent session's stop names.
	channel, thread string
}

func (r *runningTurn) stop(user string) {
	r.once.Do(func() { r.cancel(&stoppedBy{user: user}) })
}

// stoppedText is the line that says who stopped a turn. The user ID came
// with the click (through the store, with replicas); one that is not an
// ID's letters is not written into a mention token.
func stoppedText(user string) string {
	if user == "" || strings.ContainsFunc(user, func(r rune) bool { return r > 0x7f || !isIDByte(byte(r)) }) {
		return "Someone stopped this answer."
	}
	return fmt.Sprintf("<@%s> stopped this answer.", user)
}

// turnResult gathers what the summary line and the metrics report.
type turnResult struct {
	id        string
	outcome   string
	ref       string
	err       error
	steps     int
	toolCalls int
	usage     llm.Usage
}

// turnRun is one turn as the Slack adapter runs it: what the thread sees
// around the runner's work, and how the turn ends in the store.
type turnRun struct {
	b     *Bot
	j     *job
	in    inbound
	start time.Time
	res   turnResult
	log   *slog.Logger
	// ctx is the turn's own: a Stop, the timeout or a shutdown cut it.
	// post carries the Slack calls that must outlive it: the thread has
	// to hear why it ended. It ends a short grace after a shutdown cut
	// (see Bot.slackCtx).
	ctx  context.Context
	post context.Context

	// prog shows the turn in the message UI, stream in the streamed one
	// (one of them is nil), and stopCtl is the streamed turn's Stop.
	prog    *progress
	stream  *stream
	stopCtl stopControl
	co      *checkout
	out     turn.Result
	// started reports that the store has the turn, to be ended there.
	started bool
	// keep leaves the question's inbox record in the store for the next
	// start (see runTurn).
	keep bool
}

// runTurn answers one question in its thread: it shows that it works,
// streams tool calls as context lines, posts the answer (or one sentence
// saying why there is none), and records everything in the store.
func (b *Bot) runTurn(j *job) {
	t := &turnRun{b: b, j: j, in: j.in, start: time.Now(), res: turnResult{id: j.turnID}, post: b.slackCtx}
	if t.res.id == "" {
		t.res.id = newID(8)
	}
	t.log = b.log.With("thread", t.in.Key.String(), "turn", t.res.id)
	if j.recovered != nil {
		t.log = t.log.With("continues", j.recovered.turn.ID, "recovery", j.recovered.mode)
	}

	ctx, cancel := context.WithCancelCause(b.turnCtx)
	defer cancel(nil)
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, b.cfg.TurnTimeout, errTurnTimeout)
	defer cancelTimeout()
	t.ctx = ctx
	defer t.traceTurn()()
	defer b.track(t.res.id, &runningTurn{cancel: cancel, channel: t.in.Key.Channel, thread: t.in.Key.Thread})()
	b.metrics.running.Inc()
	defer b.metrics.running.Dec()

	// The question's inbox record is handed on when the turn ends, unless
	// a shutdown cut it before it was stored: then the next start answers
	// it, as the thread is told. (Once stored, a crash leaves the turn to
	// recoverTurns, and the record, found again, to be dropped.)
	defer func() {
		if !t.keep {
			b.handled(j.intake)
		}
	}()
	if j.queuedSign != nil {
		<-j.queuedSign
		b.unreact(t.post, t.in, reactQueued)
	}
	t.run()
}

// track makes a running turn reachable by the Stop button until the
// returned func is called.
func (b *Bot) track(id string, rt *runningTurn) (untrack func()) {
	b.mu.Lock()
	b.running[id] = rt
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.running, id)
		b.mu.Unlock()
	}
}

// run binds the turn to its repository, runs it over a lease and
// concludes it.
func (t *turnRun) run() {
	b, in := t.b, t.in
	if t.j.recovered != nil && !b.claim(t.post, t.j, t.res.id, t.log) {
		return
	}
	// The thread's session is read here, once, for everything the turn
	// decides with it.
	loaded, err := b.cfg.Turns.Load(t.post, in.Key)
	var note string
	if t.j.recovered != nil {
		t.started = true // the claim started it
		var goOn bool
		if note, goOn = b.announceRecovery(t.post, t.j, t.res.id, loaded, err, t.log); !goOn {
			return
		}
		note = t.announce(note)
	}
	var bound binding
	if err == nil {
		bound, err = b.bind(t.j, loaded)
	}
	if err == nil && bound.refusal != "" {
		// Nothing is read and no turn is stored: the thread hears why.
		t.postNote(note)
		b.postOut(t.post, in, render.Outgoing{Text: bound.refusal}, t.log)
		b.metrics.turns.WithLabelValues(bound.outcome).Inc()
		t.log.Info("turn", "user", in.User, "outcome", bound.outcome, "duration", time.Since(t.start).Round(time.Millisecond))
		return
	}
	if err == nil && t.j.recovered == nil && t.overBudget(b.cfg.Turns.Admit(t.post, in.Key, in.User, bound.repo)) {
		return
	}
	b.react(t.post, in, reactWorking)
	t.showWork(note)
	// The checkout is held until the answer is posted: its citations are
	// checked against the commit the tools read.
	if err == nil {
		t.co, err = b.checkout(t.ctx, bound.repo)
	}
	defer t.co.release()
	if err == nil {
		err = t.answer(loaded, bound.question)
	}
	t.conclude(err)
}

// answer runs the turn over the checkout: a new question, or the rest of
// one a restart cut off.
func (t *turnRun) answer(loaded turn.Loaded, question string) error {
	co := t.co
	t.log = t.log.With("repo", co.repo)
	if co.commit != "" { // a checkout that is not a git one has none
		t.log = t.log.With("commit", co.commit)
	}
	ctx := t.ctx
	var obs turn.Observer = t.prog
	if t.stream != nil {
		obs = t.stream
		t.stream.text.bind(t.post, co.lease, answerHome(co))
		ctx = llm.WithText(ctx, t.stream.text.heard)
	}
	req := turn.Request{
		Key: t.in.Key, Session: loaded, Lease: co.lease, Repo: co.repo, Channel: t.in.Key.Channel,
		Question: question, User: t.in.User, MsgTS: t.in.TS, TurnID: t.res.id,
		Observer: obs, Log: t.log,
		Cut: func() bool {
			return t.b.cfg.Recovery != RecoverReport && errors.Is(context.Cause(t.ctx), errShutdown)
		},
	}
	var err error
	if rc := t.j.recovered; rc != nil {
		req.Continues = rc.turn.ID
		t.out, err = t.b.cfg.Turns.Resume(ctx, req, rc.mode == RecoverRerun)
	} else {
		t.out, err = t.b.cfg.Turns.Run(ctx, req)
	}
	t.started = t.started || t.out.Started
	if t.out.Compacted {
		t.b.metrics.compactions.Inc()
	}
	return err
}

// conclude records how the turn ended, tells the thread, and logs the
// turn's one summary line.
func (t *turnRun) conclude(err error) {
	b, in, res := t.b, t.in, &t.res
	if t.overBudget(err) {
		return
	}
	takenOver := errors.Is(err, errTakenOver) || errors.Is(context.Cause(t.ctx), errTakenOver)
	if errors.Is(err, session.ErrTurnExists) {
		// Its turn was stored by a process that died before marking the
		// message handed on; recoverTurns has it.
		t.endWork(false)
		b.unreact(t.post, in, reactWorking)
		b.metrics.turns.WithLabelValues(outcomeDuplicate).Inc()
		t.log.Info("turn", "user", in.User, "outcome", outcomeDuplicate, "duration", time.Since(t.start).Round(time.Millisecond))
		return
	}
	var sentence string
	var state session.TurnState
	if !takenOver && err != nil {
		res.outcome, state, sentence = classify(err, context.Cause(t.ctx), b.cfg.TurnTimeout, b.cfg.Recovery)
		res.err = err
		if res.outcome != outcomeStopped && state != session.TurnInterrupted {
			res.ref = newID(3)
		}
		// Recorded before the thread is told: after a shutdown cut the
		// Slack calls below have only a short grace, and the next start
		// must find the turn interrupted (or ended) whatever Slack does.
		b.endTurn(t.started, res.id, state, res.ref, t.log)
		// Cut before it was stored: the next start finds the question in
		// the inbox, as the thread is told.
		t.keep = state == session.TurnInterrupted && !t.started && t.j.intake != ""
	}
	t.endWork(err == nil && !takenOver)
	res.steps, res.toolCalls, res.usage = t.out.Steps, t.out.ToolCalls, t.out.Usage

	switch {
	case takenOver:
		// Its writes were refused: another process owns the turn now.
		res.outcome = outcomeTakenOver
		t.log.Warn("turn taken over by another process; leaving the thread to it")
		b.unreact(t.post, in, reactWorking)
	case err == nil && !b.stillHolds(t.j, res.id):
		// The lease lapsed, or another process continued the turn, after
		// the last step was stored: the one that took it posts the answer.
		res.outcome = outcomeTakenOver
		t.log.Warn("turn taken over before the answer was posted; leaving the answer to the process that took it")
		if t.stream != nil {
			t.stream.close()
		}
		b.unreact(t.post, in, reactWorking)
	case err == nil:
		t.deliver()
	default:
		t.fail(state, sentence)
	}
	t.summary()
}

// deliver posts the answer and ends the turn.
func (t *turnRun) deliver() {
	b, in := t.b, t.in
	t.res.outcome = outcomeAnswered
	posted := 0
	if t.j.recovered != nil {
		posted, _, _ = streamRecords(t.j.recovered.turn.Parts)
	}
	answer := b.cite(t.co, t.out)
	if t.stream == nil || !t.stream.finish(answer, answerFooter(t.co, t.res, t.out.ThreadUsage, time.Since(t.start)), answerHome(t.co)) {
		b.postAnswer(t.post, in, answer, t.co, t.res, t.out.ThreadUsage, posted, time.Since(t.start), t.log)
	}
	// Ended at once, before anything cosmetic: a crash between the post
	// and this write is the one window in which a restart finds the turn
	// unfinished with its answer posted (claim checks the thread for it).
	b.endTurn(t.started, t.res.id, session.TurnDone, "", t.log)
	b.unreact(t.post, in, reactWorking)
	b.react(t.post, in, reactDone)
}

// fail tells the thread why there is no answer.
func (t *turnRun) fail(state session.TurnState, sentence string) {
	b, in, res := t.b, t.in, t.res
	switch {
	case res.outcome == outcomeStopped:
		var s *stoppedBy
		errors.As(context.Cause(t.ctx), &s)
		b.postOut(t.post, in, render.Outgoing{Text: stoppedText(s.user)}, t.log)
	case state == session.TurnInterrupted:
		t.log.Warn("turn interrupted by shutdown; the next start picks it up", "outcome", res.outcome, "err", res.err)
		b.postOut(t.post, in, render.Outgoing{Text: sentence}, t.log)
	default:
		t.log.Error("turn failed", "ref", res.ref, "outcome", res.outcome, "err", res.err)
		b.postOut(t.post, in, render.ErrorMessage(sentence, res.ref), t.log)
	}
	b.unreact(t.post, in, reactWorking)
	if res.outcome != outcomeStopped && state != session.TurnInterrupted {
		b.react(t.post, in, reactFailed)
	}
}

// summary counts the turn and logs its one summary line (the agent's own
// is at Debug).
func (t *turnRun) summary() {
	res := t.res
	t.b.metrics.turns.WithLabelValues(res.outcome).Inc()
	attrs := []any{
		"user", t.in.User,
		"outcome", res.outcome,
		"steps", res.steps,
		"tool_calls", res.toolCalls,
		"prompt_tokens", res.usage.PromptTokens,
		"cached_tokens", res.usage.CachedPromptTokens,
		"completion_tokens", res.usage.CompletionTokens,
		"duration", time.Since(t.start).Round(time.Millisecond),
		"queued", t.start.Sub(t.j.arrived).Round(time.Millisecond),
	}
	if t.out.HitMaxSteps {
		attrs = append(attrs, "hit_max_steps", true)
	}
	if res.ref != "" {
		attrs = append(attrs, "ref", res.ref)
	}
	attrs = append(attrs, t.governance()...)
	t.countUsage()
	t.log.Info("turn", attrs...)
}

// stillHolds reports whether the turn may post its answer: while the store
// still has it running, and with replicas while this replica holds the
// thread's lease. A turn another process took over and continued (two
// starts at once after a crash, with or without replicas) is refused its
// next step write, but a resumed turn whose answer was stored before the
// cut writes no step at all: only this read fences it off. A store that
// cannot answer does not hold the answer back.
func (b *Bot) stillHolds(j *job, turnID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if t, err := b.cfg.Store.Turn(ctx, turnID); err == nil && t.State != session.TurnRunning {
		return false
	}
	if j.holdsLease == nil {
		return true
	}
	return j.holdsLease(ctx)
}

// endTurn records where a started turn ended: a final state, or interrupted
// (not ended) so the next start picks it up. The write has its own short
// deadline, apart from the Slack calls' context, which may already be
// cancelled at shutdown. It is the adapter's, not the runner's: the state
// and the moment (after the answer is posted, before the reactions) are
// Slack's.
func (b *Bot) endTurn(started bool, turnID string, state session.TurnState, ref string, log *slog.Logger) {
	if !started {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if state == session.TurnInterrupted {
		err = b.cfg.Store.SetTurnState(ctx, turnID, state)
	} else {
		err = b.cfg.Store.EndTurn(ctx, turnID, state, ref)
	}
	if err != nil {
		log.Error("record the end of a turn", "state", state, "err", err)
	}
}
