package slackbot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
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
	// Store.ContinueTurn): its answer is theirs to post.
	errTakenOver = errors.New("turn taken over by another process")
)

// stoppedBy is the cancellation cause of a turn stopped with the button.
type stoppedBy struct{ user string }

func (s *stoppedBy) Error() string { return "stopped by " + s.user }

// runningTurn is what the Stop button reaches.
type runningTurn struct {
	once   sync.Once
	cancel context.CancelCauseFunc
	// channel is where the turn's thread is; a click from anywhere else
	// is not for this turn, whatever value it carries.
	channel string
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

// Turn outcomes, as logged and counted.
const (
	outcomeAnswered    = "answered"
	outcomeStopped     = "stopped"
	outcomeTimeout     = "timeout"
	outcomeInterrupted = "interrupted"
	outcomeModelDown   = "model_unavailable"
	outcomeModelRate   = "model_rate_limited"
	outcomeModelReject = "model_rejected"
	outcomeStepLimit   = "step_limit"
	outcomeInternal    = "internal_error"
	outcomeRepoDown    = "repository_unavailable"
	outcomeNotStarted  = "not_started"
	// A turn a restart cut off, found at start: only reported
	// (RecoverReport), or its answer was already in the thread.
	outcomeReported      = "reported_after_restart"
	outcomeAlreadyPosted = "already_posted"
	outcomeTakenOver     = "taken_over"
	// The message's turn was stored already, by a process that died
	// before it could mark the message handed on.
	outcomeDuplicate = "duplicate"
)

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

// runTurn answers one question in its thread: it shows that it works,
// streams tool calls as context lines, posts the answer (or one sentence
// saying why there is none), and records everything in the store.
func (b *Bot) runTurn(j *job) {
	in := j.in
	start := time.Now()
	res := turnResult{id: j.turnID}
	if res.id == "" {
		res.id = newID(8)
	}
	log := b.log.With("thread", in.Key.String(), "turn", res.id)
	if j.recovered != nil {
		log = log.With("continues", j.recovered.turn.ID, "recovery", j.recovered.mode)
	}

	ctx, cancel := context.WithCancelCause(b.turnCtx)
	defer cancel(nil)
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, b.cfg.TurnTimeout, errTurnTimeout)
	defer cancelTimeout()
	rt := &runningTurn{cancel: cancel, channel: in.Key.Channel}
	b.mu.Lock()
	b.running[res.id] = rt
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.running, res.id)
		b.mu.Unlock()
	}()
	b.metrics.running.Inc()
	defer b.metrics.running.Dec()

	// Posting must outlive a Stop or a timeout: the thread has to hear why.
	// It ends a short grace after a shutdown cut (see Bot.slackCtx).
	post := b.slackCtx

	// The question's inbox record is handed on when the turn ends, unless
	// a shutdown cut it before it was stored: then the next start answers
	// it, as the thread is told. (Once stored, a crash leaves the turn to
	// recoverTurns, and the record, found again, to be dropped.)
	var keep bool
	defer func() {
		if !keep {
			b.handled(j.intake)
		}
	}()

	if j.queuedSign != nil {
		<-j.queuedSign
		b.unreact(post, in, reactQueued)
	}
	if j.recovered != nil && !b.claim(post, j, res.id, log) {
		return
	}
	bound, err := b.bind(post, j)
	if err == nil && bound.refusal != "" {
		// Nothing is read and no turn is stored: the thread hears why.
		b.postOut(post, in, Outgoing{Text: bound.refusal}, log)
		b.metrics.turns.WithLabelValues(bound.outcome).Inc()
		log.Info("turn", "user", in.User, "outcome", bound.outcome, "duration", time.Since(start).Round(time.Millisecond))
		return
	}
	b.react(post, in, reactWorking)
	b.setStatus(post, in, "is reading the repository…")

	prog := newProgress(b, in, res.id, ctx, cancel)
	if j.recovered != nil {
		prog.started = true // the claim started it
	}
	// The checkout is held until the answer is posted: its citations are
	// checked against the commit the tools read.
	var co *checkout
	if err == nil {
		co, err = b.checkout(ctx, bound.repo)
	}
	defer co.release()
	var answer string
	if err == nil {
		log = log.With("repo", co.repo)
		if co.commit != "" { // a checkout that is not a git one has none
			log = log.With("commit", co.commit)
		}
		prog.link = co.link
		prog.tools = toolNames(co.ans)
		if j.recovered != nil {
			answer, err = b.resume(ctx, j, co, prog)
		} else {
			answer, err = b.answer(ctx, in, bound.question, res.id, co, prog)
		}
	}
	if perr := prog.persistErr(); err == nil && perr != nil {
		// The answer exists, but the thread's memory of it is broken:
		// say so instead of letting the next follow-up silently forget.
		err = perr
	}
	takenOver := errors.Is(context.Cause(ctx), errTakenOver)
	if errors.Is(err, session.ErrTurnExists) {
		// Its turn was stored by a process that died before marking the
		// message handed on; recoverTurns has it.
		prog.finish()
		b.unreact(post, in, reactWorking)
		b.metrics.turns.WithLabelValues(outcomeDuplicate).Inc()
		log.Info("turn", "user", in.User, "outcome", outcomeDuplicate, "duration", time.Since(start).Round(time.Millisecond))
		return
	}
	var sentence string
	var state session.TurnState
	if !takenOver && err != nil {
		res.outcome, state, sentence = classify(err, context.Cause(ctx), b.cfg.TurnTimeout, b.cfg.Recovery)
		res.err = err
		if res.outcome != outcomeStopped && state != session.TurnInterrupted {
			res.ref = newID(3)
		}
		// Recorded before the thread is told: after a shutdown cut the
		// Slack calls below have only a short grace, and the next start
		// must find the turn interrupted (or ended) whatever Slack does.
		b.endTurn(prog, res.id, state, res.ref, log)
		// Cut before it was stored: the next start finds the question in
		// the inbox, as the thread is told.
		keep = state == session.TurnInterrupted && !prog.started && j.intake != ""
	}
	prog.finish()
	res.steps, res.toolCalls, res.usage = prog.totals()

	switch {
	case takenOver:
		// Its writes were refused: another process owns the turn now.
		res.outcome = outcomeTakenOver
		log.Warn("turn taken over by another process; leaving the thread to it")
		b.unreact(post, in, reactWorking)
	case err == nil && !b.stillHolds(j, res.id):
		// The lease lapsed, or another process continued the turn, after
		// the last step was stored: the one that took it posts the answer.
		res.outcome = outcomeTakenOver
		log.Warn("turn taken over before the answer was posted; leaving the answer to the process that took it")
		b.unreact(post, in, reactWorking)
	case err == nil:
		res.outcome = outcomeAnswered
		posted := 0
		if j.recovered != nil {
			posted = len(j.recovered.turn.Parts)
		}
		b.postAnswer(post, in, b.cite(post, co, answer), co, res, posted, time.Since(start), log)
		// Ended at once, before anything cosmetic: a crash between the
		// post and this write is the one window in which a restart finds
		// the turn unfinished with its answer posted (claim checks the
		// thread for it).
		b.endTurn(prog, res.id, session.TurnDone, "", log)
		b.unreact(post, in, reactWorking)
		b.react(post, in, reactDone)
	default:
		if res.outcome == outcomeStopped {
			var s *stoppedBy
			errors.As(context.Cause(ctx), &s)
			b.postOut(post, in, Outgoing{Text: stoppedText(s.user)}, log)
		} else if state == session.TurnInterrupted {
			log.Warn("turn interrupted by shutdown; the next start picks it up", "outcome", res.outcome, "err", err)
			b.postOut(post, in, Outgoing{Text: sentence}, log)
		} else {
			log.Error("turn failed", "ref", res.ref, "outcome", res.outcome, "err", err)
			b.postOut(post, in, ErrorMessage(sentence, res.ref), log)
		}
		b.unreact(post, in, reactWorking)
		if res.outcome != outcomeStopped && state != session.TurnInterrupted {
			b.react(post, in, reactFailed)
		}
	}

	b.metrics.turns.WithLabelValues(res.outcome).Inc()
	attrs := []any{
		"user", in.User,
		"outcome", res.outcome,
		"steps", res.steps,
		"tool_calls", res.toolCalls,
		"prompt_tokens", res.usage.PromptTokens,
		"cached_tokens", res.usage.CachedPromptTokens,
		"completion_tokens", res.usage.CompletionTokens,
		"duration", time.Since(start).Round(time.Millisecond),
		"queued", start.Sub(j.arrived).Round(time.Millisecond),
	}
	if prog.hitMaxSteps {
		attrs = append(attrs, "hit_max_steps", true)
	}
	if res.ref != "" {
		attrs = append(attrs, "ref", res.ref)
	}
	// The one summary line of an answer (the agent's own is at Debug).
	log.Info("turn", attrs...)
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
// cancelled at shutdown.
func (b *Bot) endTurn(prog *progress, turnID string, state session.TurnState, ref string, log *slog.Logger) {
	if !prog.started {
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

// answer loads the thread's history, compacts it if it is over the budget,
// records the turn as started, and runs the agent over the checkout.
func (b *Bot) answer(ctx context.Context, in inbound, question, turnID string, co *checkout, prog *progress) (answer string, err error) {
	sess, ok, err := b.cfg.Store.Session(ctx, in.Key)
	if err != nil {
		return "", fmt.Errorf("load the thread's session: %w", err)
	}
	commit := co.commit
	text := llm.QuestionText(question)
	switch {
	case !ok || len(sess.History) == 0:
		// Volatile facts go in front of the first question, not into the
		// system prompt, which must stay byte-identical to be cached.
		text = agent.ContextPreamble(co.repo, commit, time.Now(), in.User) + text
	case sess.Commit != "" && commit != "" && sess.Commit != commit:
		// The history quotes files as they were; the model must know
		// they may have changed since.
		text = fmt.Sprintf("(The checkout moved from %s to %s since the last answer.)\n\n", gitexec.ShortCommit(sess.Commit), gitexec.ShortCommit(commit)) + text
	}
	user := llm.Message{Role: llm.RoleUser, Content: text}
	history := b.compactHistory(ctx, in.Key, sess.History, user)
	t := session.Turn{
		ID:       turnID,
		Key:      in.Key,
		State:    session.TurnRunning,
		User:     in.User,
		Question: question,
		MsgTS:    in.TS,
		Started:  time.Now(),
	}
	if err := b.cfg.Store.StartTurn(ctx, t, co.repo, user); err != nil {
		return "", fmt.Errorf("record the start of a turn: %w", err)
	}
	prog.started = true
	if commit != "" {
		if err := b.cfg.Store.SetCommit(ctx, in.Key, commit); err != nil {
			b.log.Warn("record a session's commit", "thread", in.Key.String(), "err", err)
		}
	}
	prog.reqHist = append(slices.Clip(history), user)
	turn, err := co.ans.Run(ctx, history, user, prog)
	if err != nil {
		return "", err
	}
	prog.hitMaxSteps = turn.HitMaxSteps
	return turn.Answer, nil
}

// refusedContent reports whether Slack refused a message for its content,
// which the same content sent again cannot pass.
func refusedContent(err error) bool {
	se, ok := errors.AsType[slack.SlackErrorResponse](err)
	return ok && slices.Contains([]string{"invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_blocks"}, se.Err)
}

// plainPart is an answer message reduced to its fallback text, which is
// mrkdwn within the limits of a message's text, with a note that says
// why it looks plain.
func plainPart(m Outgoing) Outgoing {
	return Outgoing{Text: m.Text + "\n_(Slack refused this part of the answer as formatted; it is shown as plain text.)_"}
}

// postAnswer posts the answer's messages after the first posted (those a
// cut-off turn posted before it was cut), recording each one's ts in the
// store as it goes out, so that a crash between two parts leaves the next
// start to post only the rest.
func (b *Bot) postAnswer(ctx context.Context, in inbound, answer string, co *checkout, res turnResult, posted int, took time.Duration, log *slog.Logger) {
	f := Footer{
		Steps:            res.steps,
		ToolCalls:        res.toolCalls,
		PromptTokens:     res.usage.PromptTokens,
		CachedTokens:     res.usage.CachedPromptTokens,
		CompletionTokens: res.usage.CompletionTokens,
		Duration:         took,
		Repo:             co.repo,
		Commit:           co.commit,
		Checkout:         strings.Join(co.notes, "; "),
	}
	// The thread's totals include this turn; show them once there was an
	// earlier turn, when they differ from this turn's numbers.
	if s, ok, err := b.cfg.Store.Session(ctx, in.Key); err == nil && ok && s.Usage != res.usage {
		f.ThreadPromptTokens = s.Usage.PromptTokens
		f.ThreadCachedTokens = s.Usage.CachedPromptTokens
		f.ThreadCompletionTokens = s.Usage.CompletionTokens
	}
	var home []string
	if co.lease.Web.Base != "" {
		home = append(home, co.lease.Web.Base)
	}
	msgs := AnswerMessages(answer, f, home...)
	if posted > 0 {
		log.Info("posting the rest of an answer a restart cut off", "parts", len(msgs), "posted", posted)
	}
	for i, m := range msgs {
		if i < posted {
			continue
		}
		ts, err := b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, m)
		if refusedContent(err) {
			// Slack refused the blocks (a limit we do not know of, a
			// construct it will not render): the part goes out as its
			// plain-text form rather than not at all.
			log.Warn("Slack refused a part of the answer; posting it as plain text", "part", i, "err", err)
			ts, err = b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, plainPart(m))
		}
		if err != nil {
			log.Error("post to the thread", "part", i, "err", err)
			continue
		}
		if len(msgs) == 1 {
			continue // nothing to resume between
		}
		// Its own deadline: the part is out, and the record must not be
		// lost to the Slack context's end at a shutdown.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = b.cfg.Store.AddPart(sctx, res.id, i, ts)
		cancel()
		if err != nil {
			log.Warn("record a posted part of the answer; a restart before the end may post it again", "part", i, "err", err)
		}
		if i < len(msgs)-1 {
			b.crashAt(CrashBetweenParts)
		}
	}
}

func (b *Bot) postOut(ctx context.Context, in inbound, m Outgoing, log *slog.Logger) {
	if _, err := b.poster.Post(ctx, in.Key.Channel, in.Key.Thread, m); err != nil {
		log.Error("post to the thread", "err", err)
	}
}

// classify maps a failed turn to an outcome, a store state and the one
// sentence people see. Nothing in the sentence comes from the error itself:
// raw errors may hold host paths, URLs or server messages.
func classify(err, cause error, timeout time.Duration, recovery string) (outcome string, state session.TurnState, sentence string) {
	var stop *stoppedBy
	switch {
	case errors.As(cause, &stop):
		return outcomeStopped, session.TurnStopped, ""
	case errors.Is(cause, errShutdown) && recovery == RecoverReport:
		// Stored as failed: the thread is told to ask again, so nothing
		// may pick this turn up later.
		return outcomeInterrupted, session.TurnFailed, "I was restarted before I could finish this answer; please ask again."
	case errors.Is(cause, errShutdown):
		return outcomeInterrupted, session.TurnInterrupted, noteWillResume
	case errors.Is(cause, errTurnTimeout):
		return outcomeTimeout, session.TurnFailed, fmt.Sprintf("This took longer than my limit of %s, so I stopped; a narrower question may work.", humanDuration(timeout))
	case errors.Is(err, llm.ErrRateLimited):
		return outcomeModelRate, session.TurnFailed, "The language model is rate limiting me right now; please try again in a few minutes."
	case errors.Is(err, llm.ErrUnavailable):
		return outcomeModelDown, session.TurnFailed, "The language model is not answering right now; please try again in a few minutes."
	case errors.Is(err, llm.ErrAuth), errors.Is(err, llm.ErrBadRequest), errors.Is(err, llm.ErrTruncated):
		return outcomeModelReject, session.TurnFailed, "The language model refused this request; the operators can look it up with the reference."
	case errors.Is(err, agent.ErrMaxSteps):
		return outcomeStepLimit, session.TurnFailed, "I reached my limit of steps before finding an answer; a narrower question may work."
	case errors.Is(err, agent.ErrRepeating):
		return outcomeStepLimit, session.TurnFailed, "I kept repeating the same lookups without getting closer to an answer; please rephrase the question."
	case errors.Is(err, repos.ErrUnavailable):
		return outcomeRepoDown, session.TurnFailed, "I cannot read the repository right now: its checkout is not available yet (the operators can see why on the health page). Please try again later."
	case errors.Is(err, agent.ErrEmptyAnswer):
		return outcomeModelReject, session.TurnFailed, "The language model gave no answer; please rephrase the question."
	}
	return outcomeInternal, session.TurnFailed, "Something went wrong on my side; the operators can look it up with the reference."
}

func humanDuration(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		n := int(d / time.Minute)
		if n == 1 {
			return "1 minute"
		}
		return fmt.Sprintf("%d minutes", n)
	}
	return d.Round(time.Second).String()
}

// react and the other cosmetic calls never fail a turn: a missing scope or a
// hiccup costs a log line at debug and a count in the metrics.
func (b *Bot) react(ctx context.Context, in inbound, name string) {
	err := b.api.AddReactionContext(ctx, name, slack.ItemRef{Channel: in.Key.Channel, Timestamp: in.TS})
	b.cosmetic("reactions.add", err)
}

func (b *Bot) unreact(ctx context.Context, in inbound, name string) {
	err := b.api.RemoveReactionContext(ctx, name, slack.ItemRef{Channel: in.Key.Channel, Timestamp: in.TS})
	b.cosmetic("reactions.remove", err)
}

// setStatus shows Slack's "is thinking" line under the thread. Slack clears
// it when the bot posts in the thread. Once refused for a reason that will
// not change, it is not asked again.
func (b *Bot) setStatus(ctx context.Context, in inbound, status string) {
	if b.statusOff.Load() {
		return
	}
	err := b.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: in.Key.Channel,
		ThreadTS:  in.Key.Thread,
		Status:    status,
	})
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "missing_scope", "not_allowed_token_type", "unknown_method", "method_deprecated", "feature_not_enabled":
			b.statusOff.Store(true)
		}
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code == 404 {
		b.statusOff.Store(true)
	}
	b.cosmetic("assistant.threads.setStatus", err)
}

func (b *Bot) cosmetic(method string, err error) {
	if err == nil {
		return
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		b.metrics.slackRateLimited.WithLabelValues(method).Inc()
	}
	b.metrics.slackErrors.WithLabelValues(method).Inc()
	b.log.Debug("cosmetic slack call failed", "method", method, "err", err)
}

// reject tells a question that was queued when shutdown began that it will
// not be answered now, so it is not silently dropped. A question the store
// recorded stays in its inbox, and a recovered turn that did not get to run
// stays unfinished, so the next start takes them up; the thread is told so.
func (b *Bot) reject(j *job) {
	b.metrics.turns.WithLabelValues(outcomeNotStarted).Inc()
	b.log.Warn("queued question not started before shutdown", "thread", j.in.Key.String(), "user", j.in.User, "recovered", j.recovered != nil, "kept", j.intake != "")
	note := "I am restarting and did not get to this question; please ask again in a minute."
	switch {
	case j.recovered != nil && j.recovered.mode != RecoverReport:
		note = noteNotStartedRe
	case j.intake != "":
		note = noteNotStartedNew
	}
	b.background(func(ctx context.Context) {
		if j.queuedSign != nil {
			<-j.queuedSign
			b.unreact(ctx, j.in, reactQueued)
		}
		b.postNote(ctx, j.in, note)
	})
}

// markQueued puts the hourglass on a question that has to wait.
func (b *Bot) markQueued(j *job) {
	b.background(func(ctx context.Context) {
		defer close(j.queuedSign)
		b.react(ctx, j.in, reactQueued)
	})
}

func newID(nBytes int) string {
	p := make([]byte, nBytes)
	_, _ = rand.Read(p)
	return strings.ToLower(hex.EncodeToString(p))
}
