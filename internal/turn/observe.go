package turn

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
)

// Observer is told what a turn does, for showing it. As with
// agent.Observer, the calls of one step may run concurrently: ToolStarted
// for each call of a step comes (in call order) before any of them runs,
// ToolDone may come from several goroutines at once, and StepDone after
// all of them. Implementations must not block long; the step is stored
// after StepDone returns.
type Observer interface {
	ToolStarted(c Call)
	ToolDone(c Call)
	StepDone(s Step)
}

// Call is one tool call. Summary, Failed, Took and Link are set in ToolDone.
type Call struct {
	Step int
	ID   string
	Name string
	// Args are the call's arguments as the model wrote them (JSON, but the
	// model may write anything); Brief is their short form, as the tool
	// gives it ("internal/pay/limit.go:10-80"), on one line.
	Args    string
	Brief   string
	Summary string
	Failed  bool
	Took    time.Duration
	// Link is the permalink, at the lease's commit, of what the call read
	// (a file's lines, a directory); "" when it names no one place or the
	// repository has no web view.
	Link string
}

// Step is one completed model request and the calls it asked for.
type Step struct {
	N     int
	Usage llm.Usage
}

// recorder is the agent.Observer of one turn: it tells the turn's
// Observer, persists each step as it completes, teaches the calibrator,
// and counts the turn's steps, calls and usage.
type recorder struct {
	r      *Runner
	req    Request
	ctx    context.Context
	cancel context.CancelCauseFunc
	// system and specs are what every request sends before the history.
	system llm.Message
	specs  []llm.ToolSpec
	// tools are the turn's; they describe a call in short, when they can.
	tools agent.Toolbox
	// sent is the history the next request sends (as the store has it,
	// without the system prompt); StepDone extends it. Only the loop's
	// goroutine touches it, in StepDone.
	sent []llm.Message

	mu        sync.Mutex
	steps     int
	toolCalls int
	called    []string // the tools' names, in the order called
	usage     llm.Usage
	persist   error
}

var _ agent.Observer = (*recorder)(nil)

func (r *Runner) newRecorder(ctx context.Context, cancel context.CancelCauseFunc, req Request, a loop, sent []llm.Message) *recorder {
	system, specs := a.Prefix()
	if req.Observer == nil {
		req.Observer = nopObserver{}
	}
	return &recorder{r: r, req: req, ctx: ctx, cancel: cancel, system: system, specs: specs, sent: sent, tools: a.tools}
}

func (o *recorder) ToolStarted(step int, call tools.Call) {
	o.mu.Lock()
	o.toolCalls++
	o.called = append(o.called, call.Name)
	o.mu.Unlock()
	o.req.Observer.ToolStarted(Call{Step: step, ID: call.ID, Name: call.Name, Args: string(call.Input), Brief: o.describe(call)})
}

// describe is the short form of call's arguments: the tool's own (see
// tools.Describer) when the toolbox gives one, else the arguments as
// written.
func (o *recorder) describe(call tools.Call) string {
	if d, ok := o.tools.(interface{ Describe(tools.Call) string }); ok {
		return d.Describe(call)
	}
	return string(call.Input)
}

func (o *recorder) ToolDone(step int, call tools.Call, res tools.Result, took time.Duration) {
	o.req.Observer.ToolDone(Call{
		Step: step, ID: call.ID, Name: call.Name, Args: string(call.Input), Brief: o.describe(call),
		Summary: res.Summary, Failed: res.IsError, Took: took,
		Link: link(o.ctx, o.req.Lease, res),
	})
}

func (o *recorder) StepDone(step int, appended []llm.Message, usage llm.Usage) {
	o.mu.Lock()
	o.steps++
	o.usage = o.usage.Add(usage)
	o.mu.Unlock()
	o.req.Observer.StepDone(Step{N: step, Usage: usage})

	o.observe(appended, usage)
	if o.req.Cut != nil && o.req.Cut() {
		// The results of a step cut off to be resumed say "cancelled";
		// stored without them, the calls run again on resume.
		appended = withoutCutResults(appended)
	}
	// Persisting as each step completes means a crash loses at most the
	// step in flight. The store write is short; the loop waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := o.r.cfg.Store.AppendStep(ctx, o.req.TurnID, appended, usage); err != nil {
		if errors.Is(err, session.ErrTurnEnded) {
			o.cancel(ErrTakenOver)
		}
		o.req.Log.Error("persist a step", "step", step, "err", err)
		o.mu.Lock()
		if o.persist == nil {
			o.persist = err
		}
		o.mu.Unlock()
	}
}

// observe teaches the calibrator how far the estimate of the request that
// produced this step was from the prompt tokens the server reported. The
// request was the history so far plus any note the loop added before the
// reply; a step made of two requests (an empty reply asked again) reports
// their sum and is skipped.
func (o *recorder) observe(appended []llm.Message, usage llm.Usage) {
	reply := slices.IndexFunc(appended, func(m llm.Message) bool { return m.Role == llm.RoleAssistant })
	if reply == 0 && usage.PromptTokens > 0 {
		est := o.r.estimateRaw(o.system, o.specs, o.sent)
		o.r.cfg.Calibrator.Observe(o.r.cfg.Model, est, usage.PromptTokens)
	}
	o.sent = append(o.sent, appended...)
}

func (o *recorder) totals() (steps, toolCalls int, usage llm.Usage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.steps, o.toolCalls, o.usage
}

func (o *recorder) calledTools() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.called)
}

func (o *recorder) persistErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.persist
}

// withoutCutResults drops the tool results after the step's last tool call
// message, leaving the calls unanswered for Resume to run again.
func withoutCutResults(msgs []llm.Message) []llm.Message {
	if !slices.ContainsFunc(msgs, func(m llm.Message) bool { return m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 }) {
		return msgs
	}
	return slices.DeleteFunc(slices.Clone(msgs), func(m llm.Message) bool { return m.Role == llm.RoleTool })
}

type nopObserver struct{}

func (nopObserver) ToolStarted(Call) {}
func (nopObserver) ToolDone(Call)    {}
func (nopObserver) StepDone(Step)    {}
