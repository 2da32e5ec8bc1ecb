package slackbot

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
)

// progress is the agent.Observer of one turn. It keeps the turn's tool calls
// as context lines and a writer goroutine mirrors them into the thread:
// new messages are posted at once, edits of a posted message are coalesced
// to one per ProgressInterval (chat.update allows about 50 a minute), and
// finish makes the last edit, which drops the Stop button, before the
// answer is posted. StepDone persists each step as it completes.
type progress struct {
	b      *Bot
	in     inbound
	turnID string
	// ctx is the turn's context: its cause tells a step cut by shutdown.
	// cancel stops the turn when the store says another process has it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// reqHist is the history the turn's next request sends (as the store has
	// it, without the system prompt), for calibrating the estimator; the
	// turn goroutine sets it before the agent runs, StepDone extends it.
	reqHist []llm.Message

	// started and hitMaxSteps are the turn goroutine's: whether the store
	// has the turn, and whether the agent was cut at its step limit (the
	// answer then says so itself; the summary line records it).
	started     bool
	hitMaxSteps bool

	// link, when set, gives a finished call's context line its link to
	// the file it read; set before the agent runs. It may run git, so it
	// is called outside mu.
	link func(context.Context, tools.Call, tools.Result) string
	// tools are the names the answerer offers (nil: not known), the only
	// tool names metrics are labelled with; set before the agent runs.
	tools map[string]bool

	mu        sync.Mutex
	lines     []CallLine
	byID      map[string]int
	steps     int
	toolCalls int
	usage     llm.Usage
	stepMark  time.Time // when the current model request began
	stepTimed bool      // its latency is observed
	persist   error

	kick     chan struct{}
	done     chan struct{}
	finished chan struct{}
	once     sync.Once

	sent []string   // owned by the writer: JSON of each posted message
	ts   []string   // owned by the writer: ts of each posted message
	out  []Outgoing // owned by the writer: each posted message as sent
}

var _ agent.Observer = (*progress)(nil)

func newProgress(b *Bot, in inbound, turnID string, ctx context.Context, cancel context.CancelCauseFunc) *progress {
	p := &progress{
		b:        b,
		in:       in,
		turnID:   turnID,
		ctx:      ctx,
		cancel:   cancel,
		byID:     make(map[string]int),
		stepMark: time.Now(),
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	go p.write()
	return p
}

func (p *progress) ToolStarted(step int, call tools.Call) {
	p.mu.Lock()
	p.timeStepLocked()
	p.toolCalls++
	p.byID[call.ID] = len(p.lines)
	p.lines = append(p.lines, CallLine{Name: call.Name, Args: string(call.Input), State: CallRunning})
	p.mu.Unlock()
	p.poke()
}

func (p *progress) ToolDone(step int, call tools.Call, res tools.Result, took time.Duration) {
	outcome := "ok"
	if res.IsError {
		outcome = "error"
	}
	label := toolLabel(call.Name, p.tools)
	p.b.metrics.toolCalls.WithLabelValues(label, outcome).Inc()
	p.b.metrics.toolSeconds.WithLabelValues(label).Observe(took.Seconds())
	var url string
	if p.link != nil {
		url = p.link(p.ctx, call, res)
	}
	p.mu.Lock()
	if i, ok := p.byID[call.ID]; ok {
		p.lines[i].State = CallOK
		if res.IsError {
			p.lines[i].State = CallFailed
		}
		p.lines[i].Summary = res.Summary
		p.lines[i].URL = url
	}
	p.mu.Unlock()
	p.poke()
}

func (p *progress) StepDone(step int, appended []llm.Message, usage llm.Usage) {
	m := p.b.metrics
	// A counter panics when asked to go down; whatever the model reported,
	// a negative count counts nothing.
	m.tokens.WithLabelValues("prompt").Add(float64(max(usage.PromptTokens, 0)))
	m.tokens.WithLabelValues("cached").Add(float64(max(usage.CachedPromptTokens, 0)))
	m.tokens.WithLabelValues("completion").Add(float64(max(usage.CompletionTokens, 0)))

	p.mu.Lock()
	p.timeStepLocked()
	p.steps++
	p.usage = p.usage.Add(usage)
	p.stepMark, p.stepTimed = time.Now(), false
	p.mu.Unlock()

	p.observe(appended, usage)
	if p.b.cfg.Recovery != RecoverReport && errors.Is(context.Cause(p.ctx), errShutdown) {
		// The results of a step cut by shutdown say "cancelled"; stored
		// without them, the calls are run again when the turn resumes.
		appended = withoutCutResults(appended)
	}

	// Persisting as each step completes means a crash loses at most the
	// step in flight. The store write is short; the loop waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.b.cfg.Store.AppendStep(ctx, p.turnID, appended, usage); err != nil {
		if errors.Is(err, session.ErrTurnEnded) {
			p.cancel(errTakenOver)
		}
		p.b.log.Error("persist a step", "thread", p.in.Key.String(), "turn", p.turnID, "step", step, "err", err)
		p.mu.Lock()
		if p.persist == nil {
			p.persist = err
		}
		p.mu.Unlock()
	}
}

// observe teaches the calibrator how far the estimate of the request that
// produced this step was from the prompt tokens the server reported. The
// request was the history so far plus any note the loop added before the
// reply; a step made of two requests (an empty reply asked again) reports
// their sum and is skipped.
func (p *progress) observe(appended []llm.Message, usage llm.Usage) {
	reply := slices.IndexFunc(appended, func(m llm.Message) bool { return m.Role == llm.RoleAssistant })
	if p.reqHist != nil && reply == 0 && usage.PromptTokens > 0 {
		p.b.cfg.Calibrator.Observe(p.b.cfg.Model, p.b.estimateRaw(p.reqHist), usage.PromptTokens)
	}
	p.reqHist = append(p.reqHist, appended...)
}

// withoutCutResults drops the tool results after the step's last tool call
// message, leaving the calls unanswered for Resume to run again.
func withoutCutResults(msgs []llm.Message) []llm.Message {
	if !slices.ContainsFunc(msgs, func(m llm.Message) bool { return m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 }) {
		return msgs
	}
	return slices.DeleteFunc(slices.Clone(msgs), func(m llm.Message) bool { return m.Role == llm.RoleTool })
}

// timeStepLocked observes the model's latency for the current step: the time
// from the request to its first tool call, or to StepDone for an answer.
func (p *progress) timeStepLocked() {
	if !p.stepTimed {
		p.stepTimed = true
		p.b.metrics.stepSeconds.Observe(time.Since(p.stepMark).Seconds())
	}
}

func (p *progress) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// finish waits for the writer's last edit. After it, the thread shows every
// call with its result and no Stop button.
func (p *progress) finish() {
	p.once.Do(func() { close(p.done) })
	<-p.finished
}

func (p *progress) totals() (steps, toolCalls int, usage llm.Usage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.steps, p.toolCalls, p.usage
}

func (p *progress) persistErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.persist
}

func (p *progress) write() {
	defer close(p.finished)
	interval := p.b.cfg.ProgressInterval
	for {
		select {
		case <-p.kick:
		case <-p.done:
			p.flush(true)
			return
		}
		p.flush(false)
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-p.done:
			t.Stop()
			p.flush(true)
			return
		}
	}
}

// flush renders all lines and brings the thread in line: posts the messages
// that are new, edits those whose content changed.
func (p *progress) flush(final bool) {
	p.mu.Lock()
	lines := append([]CallLine(nil), p.lines...)
	p.mu.Unlock()
	if len(lines) == 0 {
		return
	}
	opts := ProgressOptions{StopActionID: stopActionID, StopValue: p.turnID}
	if final {
		opts = ProgressOptions{}
	}
	// Posts and edits outlive a Stop or a timeout (the thread must end up
	// right), but not the final grace after a shutdown cut.
	ctx, cancel := context.WithTimeout(p.b.slackCtx, time.Minute)
	defer cancel()
	ch, thread := p.in.Key.Channel, p.in.Key.Thread
	msgs := ProgressMessages(lines, opts)
	if final {
		// Rendering splits the same way with and without the button, so
		// this finds nothing; should that ever change, a posted message
		// the final render no longer covers would keep a live Stop button
		// under the answer.
		for i := len(msgs); i < len(p.out); i++ {
			msgs = append(msgs, withoutActions(p.out[i]))
		}
	}
	for i, m := range msgs {
		js, err := json.Marshal(m)
		if err != nil {
			p.b.log.Error("render a progress message", "err", err)
			return
		}
		if i < len(p.ts) {
			if p.ts[i] == "" || p.sent[i] == string(js) {
				continue
			}
			if err := p.b.poster.Update(ctx, ch, p.ts[i], m); err != nil {
				p.b.log.Error("update a progress message", "thread", p.in.Key.String(), "turn", p.turnID, "err", err)
				continue
			}
			p.sent[i], p.out[i] = string(js), m
			continue
		}
		ts, err := p.b.poster.Post(ctx, ch, thread, m)
		if err != nil {
			// The poster already waited out 429s. Any other failure may
			// have posted anyway, and Slack has no idempotency key, so the
			// message is not tried again: a lost line is logged, a double
			// one would confuse the thread.
			p.b.log.Error("post a progress message", "thread", p.in.Key.String(), "turn", p.turnID, "err", err)
		}
		p.ts = append(p.ts, ts)
		p.sent = append(p.sent, string(js))
		p.out = append(p.out, m)
	}
}

// withoutActions is m without its Stop button.
func withoutActions(m Outgoing) Outgoing {
	m.Blocks = slices.DeleteFunc(slices.Clone(m.Blocks), func(b slack.Block) bool { return b.BlockType() == slack.MBTAction })
	return m
}

// unknownTool labels the metrics of a call to a tool that does not exist.
const unknownTool = "unknown"

// toolLabel is the metric label of a call to name. The model picks the
// name, and may be talked into inventing a new one on every call: each
// would be a series /metrics keeps and serves forever, holding whatever
// text the model chose. Only the tools the answerer offers are labelled by
// name; without that list, a short tool-like identifier is.
func toolLabel(name string, offered map[string]bool) string {
	if offered != nil {
		if offered[name] {
			return name
		}
		return unknownTool
	}
	if len(name) == 0 || len(name) > 40 || strings.ContainsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '_')
	}) {
		return unknownTool
	}
	return name
}

// toolNames is the set of tools ans offers, when it says (agent.Agent
// does, through Prefix); nil otherwise.
func toolNames(ans Answerer) map[string]bool {
	pa, ok := ans.(interface {
		Prefix() (llm.Message, []llm.ToolSpec)
	})
	if !ok {
		return nil
	}
	_, specs := pa.Prefix()
	names := make(map[string]bool, len(specs))
	for _, s := range specs {
		names[s.Name] = true
	}
	return names
}
