package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxSteps    = 25
	DefaultToolTimeout = 30 * time.Second
	DefaultMaxRepeats  = 2
	DefaultMaxParallel = 8
)

// toolStopGrace is how long a call whose time is up waits for its tool to
// return. The tools look at their context every few KB of input, so they
// stop in milliseconds; this only bounds a tool that does not.
const toolStopGrace = 5 * time.Second

// stuckSteps is how many steps in a row may consist only of refused repeats
// before the loop stops offering tools. One such step is a slip the error
// results can correct; two mean the model is going round in circles.
const stuckSteps = 2

var (
	// ErrMaxSteps means the step limit was reached and the final request
	// without tools failed too; the error also wraps the model's error.
	ErrMaxSteps = errors.New("step limit reached and the final answer request failed")
	// ErrRepeating means the model kept repeating tool calls it had already
	// made and the final request without tools failed too; the error also
	// wraps the model's error.
	ErrRepeating = errors.New("model kept repeating tool calls and the final answer request failed")
	// ErrEmptyAnswer means the model answered with neither text nor tool
	// calls, also after being asked again. Retrying the question, or using
	// another model, is what can help.
	ErrEmptyAnswer = errors.New("model gave an empty answer twice")
	// ErrPendingCalls means the history ends with tool calls that have no
	// results, as a turn cut off by a crash leaves it. Providers reject such a
	// history, so Run refuses it: finish that turn with Resume first.
	ErrPendingCalls = errors.New("history ends with tool calls that have no results; finish that turn with Resume first")
)

// Config configures an Agent. Zero values take the defaults.
type Config struct {
	Model Model
	Tools Toolbox
	// SystemPrompt is sent first on every request; it must be static (no
	// dates, ids or names) to keep the provider's prompt cache warm.
	// Default DefaultSystemPrompt.
	SystemPrompt string
	// MaxSteps is the number of model requests with tools a turn may make;
	// after it, one last request without tools asks for the best answer so
	// far. Default 25.
	MaxSteps int
	// ToolTimeout bounds each tool call. Default 30s.
	ToolTimeout time.Duration
	// MaxRepeats is how many times per turn an identical call (same name,
	// same arguments up to key order and white space) runs; later ones get
	// an error result telling the model to use the result it has. Default 2.
	MaxRepeats int
	// MaxParallel bounds the read-only calls of one step that run at once.
	// Default 8.
	MaxParallel int
	// Compact, when set, is called before every request with the messages
	// about to be sent (the system prompt first) and the tools; if it
	// reports changed, that request and every later one of the turn are
	// built on what it returned, followed by the messages appended since.
	// It is the guard for a turn that outgrows the context budget on its
	// own: between two compactions the sent prefix stays byte-identical, so
	// the provider's prompt cache misses once. Only what is sent changes;
	// Turn.Appended and Observer.StepDone report the full messages, so the
	// caller's history stays complete (and is compacted between turns).
	// It must be deterministic and return changed false when nothing is to
	// be done. budget.Calibrator.Compactor builds one.
	Compact func(msgs []llm.Message, tools []llm.ToolSpec) ([]llm.Message, bool)
	// Logger receives one Info line per turn and Debug lines per step and
	// call; the caller narrows it (component, thread). Default: discard.
	Logger *slog.Logger
}

// Agent answers questions with a model and a toolbox. It keeps no state
// between turns (the caller owns the history), so one Agent is safe for
// concurrent use by many sessions.
type Agent struct {
	model       Model
	tools       Toolbox
	system      llm.Message
	specs       []llm.ToolSpec
	readOnly    func(name string) bool
	maxSteps    int
	toolTimeout time.Duration
	stopGrace   time.Duration
	maxRepeats  int
	maxParallel int
	compact     func([]llm.Message, []llm.ToolSpec) ([]llm.Message, bool)
	log         *slog.Logger
}

// New checks cfg, fills in defaults and converts the tool definitions once:
// every request of every turn sends the very same ToolSpec slice, so the
// tools part of the request prefix never changes.
func New(cfg Config) (*Agent, error) {
	var errs []error
	if cfg.Model == nil {
		errs = append(errs, errors.New("agent: Config.Model is required"))
	}
	if cfg.Tools == nil {
		errs = append(errs, errors.New("agent: Config.Tools is required"))
	}
	if cfg.MaxSteps < 0 {
		errs = append(errs, fmt.Errorf("agent: Config.MaxSteps is %d; use a positive number or 0 for the default %d", cfg.MaxSteps, DefaultMaxSteps))
	}
	if cfg.ToolTimeout < 0 {
		errs = append(errs, fmt.Errorf("agent: Config.ToolTimeout is %s; use a positive duration or 0 for the default %s", cfg.ToolTimeout, DefaultToolTimeout))
	}
	if cfg.MaxRepeats < 0 {
		errs = append(errs, fmt.Errorf("agent: Config.MaxRepeats is %d; use a positive number or 0 for the default %d", cfg.MaxRepeats, DefaultMaxRepeats))
	}
	if cfg.MaxParallel < 0 {
		errs = append(errs, fmt.Errorf("agent: Config.MaxParallel is %d; use a positive number or 0 for the default %d", cfg.MaxParallel, DefaultMaxParallel))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	a := &Agent{
		model:       cfg.Model,
		tools:       cfg.Tools,
		system:      llm.Message{Role: llm.RoleSystem, Content: cmpOr(cfg.SystemPrompt, DefaultSystemPrompt)},
		maxSteps:    cmpOr(cfg.MaxSteps, DefaultMaxSteps),
		toolTimeout: cmpOr(cfg.ToolTimeout, DefaultToolTimeout),
		stopGrace:   toolStopGrace,
		maxRepeats:  cmpOr(cfg.MaxRepeats, DefaultMaxRepeats),
		maxParallel: cmpOr(cfg.MaxParallel, DefaultMaxParallel),
		compact:     cfg.Compact,
		log:         cfg.Logger,
		readOnly:    func(string) bool { return true },
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.log = a.log.With("component", "agent")
	if ro, ok := cfg.Tools.(ReadOnlyReporter); ok {
		a.readOnly = ro.ReadOnly
	}
	for _, d := range cfg.Tools.Definitions() {
		params := d.Parameters
		if len(params) == 0 {
			// OpenAI-compatible servers reject a function without a
			// parameters schema object.
			params = []byte(`{"type":"object","properties":{}}`)
		}
		a.specs = append(a.specs, llm.ToolSpec{Name: d.Name, Description: d.Description, Parameters: params})
	}
	return a, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Prefix is what every request sends before the history: the static system
// message and the tool specs, the same values on every call. A caller that
// estimates a request's size before the agent builds it (to compact the
// history between turns) counts them in.
func (a *Agent) Prefix() (system llm.Message, tools []llm.ToolSpec) {
	return a.system, slices.Clip(a.specs)
}

// Turn is what one question produced.
type Turn struct {
	// Answer is the final answer as it should be shown; after a forced stop
	// it ends with an italic note saying so.
	Answer string
	// Appended is every message this turn added to the history: the user
	// message first (Run only; Resume adds none), then exactly the messages
	// reported through Observer.StepDone, in order.
	Appended []llm.Message
	// Steps is the number of model requests made.
	Steps int
	// ToolCalls is the number of tool calls the model asked for, refused
	// repeats included.
	ToolCalls int
	// Usage is summed over the turn's requests.
	Usage llm.Usage
	// LastPromptTokens is the prompt size of the last request: the best
	// estimate of the history's size, for deciding when to compact.
	LastPromptTokens int
	// HitMaxSteps reports that the answer came from the final request
	// without tools after the step limit.
	HitMaxSteps bool
	// Repeating reports that the answer came from a final request without
	// tools because the model kept asking for calls it had already made.
	Repeating bool
}

// Run answers one user message. history is the session so far, without the
// system prompt (the agent puts its static system prompt first on every
// request); it is not modified. The returned Turn is filled as far as the
// loop got, also on error: its Appended messages form a valid history (every
// tool call has its result) that can be persisted as it is.
//
// A cancelled ctx stops the loop; calls already running get a "cancelled"
// result so the history stays valid, and the error wraps ctx's error.
// Model errors are wrapped with %w, so errors.Is and errors.As see them.
func (a *Agent) Run(ctx context.Context, history []llm.Message, user llm.Message, obs Observer) (Turn, error) {
	if user.Role == "" {
		user.Role = llm.RoleUser
	}
	if user.Role != llm.RoleUser {
		return Turn{}, fmt.Errorf("agent: the question must be a user message, not %q", user.Role)
	}
	if calls := unanswered(history); len(calls) > 0 {
		return Turn{}, fmt.Errorf("agent: %w (%d calls, first %s)", ErrPendingCalls, len(calls), calls[0].Name)
	}
	user.Content = llm.QuestionText(user.Content)
	r := a.newRun(history, obs)
	r.conv = append(r.conv, user)
	r.reported = len(r.conv)
	return r.loop(ctx)
}

// Resume continues a turn that was cut off, by a shutdown or a crash, from
// the history persisted so far: its last user message is the question and
// the assistant and tool messages after it are the steps already done. Calls
// left without results are run again (the tools are read-only, so this is
// safe), then the loop goes on with the steps that remain. If the history
// already ends with an answer, Resume returns it without a request.
// Turn.Appended holds only the messages Resume added.
func (a *Agent) Resume(ctx context.Context, history []llm.Message, obs Observer) (Turn, error) {
	q := questionIndex(history)
	if q < 0 {
		return Turn{}, errors.New("agent: nothing to resume: the history has no question")
	}
	if last := history[len(history)-1]; q < len(history)-1 && last.Role == llm.RoleAssistant &&
		len(last.ToolCalls) == 0 && strings.TrimSpace(last.Content) != "" {
		return Turn{Answer: strings.TrimSpace(last.Content)}, nil
	}
	r := a.newRun(history, obs)
	r.reported = len(r.conv)
	for _, m := range history[q+1:] {
		if m.Role != llm.RoleAssistant {
			continue
		}
		r.step++
		for _, c := range m.ToolCalls {
			r.rep.allow(c.Name, []byte(c.Arguments))
		}
	}
	if pending := unanswered(history); len(pending) > 0 {
		calls := make([]tools.Call, len(pending))
		for i, c := range pending {
			calls[i] = tools.Call{ID: c.ID, Name: c.Name, Input: []byte(c.Arguments)}
		}
		run := make([]bool, len(calls))
		for i := range run {
			run[i] = true
		}
		r.runStep(ctx, r.step, calls, run)
		r.stepDone(r.step)
		if err := ctx.Err(); err != nil {
			return r.end(fmt.Errorf("agent: resume step %d: %w", r.step, err))
		}
	}
	return r.loop(ctx)
}

// run is the state of one turn.
type run struct {
	a   *Agent
	obs Observer
	// conv is the system prompt, the history and what this turn appended.
	// It only grows; each request sends a capacity-capped view of it, so
	// no request can see a later change of an earlier one's messages.
	conv     []llm.Message
	start    int // index in conv of the turn's first message
	reported int // conv[:reported] has been handed to the caller
	usage    llm.Usage
	step     int
	rep      repeats
	turn     Turn
	began    time.Time
	// wire, when set, is the compacted form of conv[:wireFrom] that
	// requests send in its place (see Config.Compact).
	wire     []llm.Message
	wireFrom int
}

func (a *Agent) newRun(history []llm.Message, obs Observer) *run {
	if obs == nil {
		obs = nopObserver{}
	}
	conv := make([]llm.Message, 0, 1+len(history)+16)
	conv = append(conv, a.system)
	conv = append(conv, history...)
	return &run{
		a:     a,
		obs:   obs,
		conv:  conv,
		start: len(conv),
		rep:   repeats{max: a.maxRepeats},
		began: time.Now(),
	}
}

func (r *run) loop(ctx context.Context) (Turn, error) {
	nudged := false
	stuck := 0
	for {
		if err := ctx.Err(); err != nil {
			return r.end(fmt.Errorf("agent: before step %d: %w", r.step+1, err))
		}
		if r.step >= r.a.maxSteps {
			r.turn.HitMaxSteps = true
			return r.finish(ctx, maxStepsNote(r.a.maxSteps), maxStepsMark(r.a.maxSteps), ErrMaxSteps)
		}
		if stuck >= stuckSteps {
			r.turn.Repeating = true
			return r.finish(ctx, repeatingNote, repeatingMark, ErrRepeating)
		}
		msg, err := r.request(ctx, r.a.specs)
		if err != nil {
			return r.end(err)
		}
		if len(msg.ToolCalls) == 0 {
			if strings.TrimSpace(msg.Content) == "" {
				// Seen with thinking models that spend the reply on
				// reasoning. The empty reply is not kept: some providers
				// reject an assistant message without content.
				if nudged {
					return r.end(fmt.Errorf("agent: step %d: %w", r.step, ErrEmptyAnswer))
				}
				nudged = true
				r.conv = append(r.conv, llm.Message{Role: llm.RoleUser, Content: emptyAnswerNote})
				continue
			}
			r.conv = append(r.conv, msg)
			r.stepDone(r.step)
			r.turn.Answer = strings.TrimSpace(msg.Content)
			return r.end(nil)
		}

		step := r.step
		msg.ToolCalls = withIDs(msg.ToolCalls, step)
		r.conv = append(r.conv, msg)
		calls := make([]tools.Call, len(msg.ToolCalls))
		run := make([]bool, len(calls))
		allRefused := true
		for i, c := range msg.ToolCalls {
			calls[i] = tools.Call{ID: c.ID, Name: c.Name, Input: []byte(c.Arguments)}
			run[i] = r.rep.allow(c.Name, calls[i].Input)
			allRefused = allRefused && !run[i]
		}
		r.turn.ToolCalls += len(calls)
		r.runStep(ctx, step, calls, run)
		r.stepDone(step)
		if err := ctx.Err(); err != nil {
			return r.end(fmt.Errorf("agent: step %d: %w", step, err))
		}
		if allRefused {
			stuck++
		} else {
			stuck = 0
		}
	}
}

// finish makes the last request, without tools, after the loop was stopped:
// the person still gets the best answer the model can give from what it has
// found, marked as possibly incomplete.
func (r *run) finish(ctx context.Context, note, mark string, sentinel error) (Turn, error) {
	r.conv = append(r.conv, llm.Message{Role: llm.RoleUser, Content: note})
	msg, err := r.request(ctx, nil)
	if err != nil {
		return r.end(fmt.Errorf("agent: %w: %w", sentinel, err))
	}
	// Tool calls now would need results and another request; the text is
	// what the model has to say.
	msg.ToolCalls = nil
	text := strings.TrimSpace(msg.Content)
	if text == "" {
		text = noAnswerFallback
		msg.Content = text
	}
	r.conv = append(r.conv, msg)
	r.stepDone(r.step)
	r.turn.Answer = text + "\n\n" + mark
	return r.end(nil)
}

// request sends the conversation so far and accounts for the reply.
func (r *run) request(ctx context.Context, specs []llm.ToolSpec) (llm.Message, error) {
	r.step++
	r.turn.Steps++
	msgs := r.wireMessages(specs)
	resp, err := r.a.model.Complete(ctx, llm.Request{Messages: msgs, Tools: specs})
	if err != nil {
		return llm.Message{}, fmt.Errorf("agent: step %d: model request: %w", r.step, err)
	}
	r.turn.Usage = r.turn.Usage.Add(resp.Usage)
	r.turn.LastPromptTokens = resp.Usage.PromptTokens
	r.usage = r.usage.Add(resp.Usage)
	msg := resp.Message
	msg.Role = llm.RoleAssistant
	r.a.log.Debug("model replied", "step", r.step, "tool_calls", len(msg.ToolCalls),
		"prompt_tokens", resp.Usage.PromptTokens, "cached_tokens", resp.Usage.CachedPromptTokens,
		"completion_tokens", resp.Usage.CompletionTokens, "finish_reason", resp.FinishReason)
	return msg, nil
}

// wireMessages is what the next request sends: conv, or the compacted prefix
// and what came after it, compacted anew if Config.Compact says so.
func (r *run) wireMessages(specs []llm.ToolSpec) []llm.Message {
	n := len(r.conv)
	msgs := r.conv[:n:n]
	if r.wire != nil {
		msgs = slices.Concat(r.wire, r.conv[r.wireFrom:n])
	}
	if r.a.compact == nil {
		return msgs
	}
	tools := specs
	if tools == nil {
		// The final request without tools is sized as if they were
		// sent, so it does not compact where the others would not.
		tools = r.a.specs
	}
	if c, changed := r.a.compact(msgs, tools); changed {
		r.a.log.Info("compacted a turn's request", "step", r.step, "messages_before", len(msgs), "messages_after", len(c))
		r.wire, r.wireFrom = slices.Clip(c), n
		return r.wire
	}
	return msgs
}

// stepDone hands the messages appended since the last report, and the usage
// of the requests since then, to the observer.
func (r *run) stepDone(step int) {
	msgs := slices.Clone(r.conv[r.reported:])
	r.reported = len(r.conv)
	usage := r.usage
	r.usage = llm.Usage{}
	r.obs.StepDone(step, msgs, usage)
}

func (r *run) end(err error) (Turn, error) {
	r.turn.Appended = slices.Clone(r.conv[r.start:r.reported])
	// Debug: the adapter running the turn (Slack, the terminal) logs the
	// one summary line per answer, with what only it knows (thread,
	// repository, outcome).
	level := slog.LevelDebug
	attrs := []any{
		"steps", r.turn.Steps, "tool_calls", r.turn.ToolCalls,
		"prompt_tokens", r.turn.Usage.PromptTokens, "cached_tokens", r.turn.Usage.CachedPromptTokens,
		"completion_tokens", r.turn.Usage.CompletionTokens, "last_prompt_tokens", r.turn.LastPromptTokens,
		"duration", time.Since(r.began),
	}
	if r.turn.HitMaxSteps {
		attrs = append(attrs, "hit_max_steps", true)
	}
	if r.turn.Repeating {
		attrs = append(attrs, "repeating", true)
	}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	r.a.log.Log(context.Background(), level, "turn done", attrs...)
	return r.turn, err
}

// withIDs gives every call an ID unique within the step: a tool result is
// matched to its call by ID, and a few servers (Ollama among them) send none.
// The slice is copied before any change, since it belongs to the response.
func withIDs(calls []llm.ToolCall, step int) []llm.ToolCall {
	seen := make(map[string]bool, len(calls))
	copied := false
	for i, c := range calls {
		if c.ID != "" && !seen[c.ID] {
			seen[c.ID] = true
			continue
		}
		if !copied {
			calls = slices.Clone(calls)
			copied = true
		}
		calls[i].ID = fmt.Sprintf("call_%d_%d", step, i)
		seen[calls[i].ID] = true
	}
	return calls
}

// unanswered returns the calls of the history's last assistant message that
// have no result, if nothing but tool results follows that message.
func unanswered(h []llm.Message) []llm.ToolCall {
	i := len(h) - 1
	for i >= 0 && h[i].Role == llm.RoleTool {
		i--
	}
	if i < 0 || h[i].Role != llm.RoleAssistant || len(h[i].ToolCalls) == 0 {
		return nil
	}
	answered := make(map[string]bool, len(h)-i-1)
	for _, m := range h[i+1:] {
		answered[m.ToolCallID] = true
	}
	var missing []llm.ToolCall
	for _, c := range h[i].ToolCalls {
		if !answered[c.ID] {
			missing = append(missing, c)
		}
	}
	return missing
}

// QuestionIndex is the index of the last user message that is a person's
// question rather than a note of the loop, or -1: where the turn Resume
// would continue starts.
func QuestionIndex(h []llm.Message) int { return questionIndex(h) }

// questionIndex is the index of the last user message that is a person's
// question rather than a note of the loop, or -1.
func questionIndex(h []llm.Message) int {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == llm.RoleUser && !strings.HasPrefix(h[i].Content, noteTag) {
			return i
		}
	}
	return -1
}

type nopObserver struct{}

func (nopObserver) ToolStarted(int, tools.Call)                           {}
func (nopObserver) ToolDone(int, tools.Call, tools.Result, time.Duration) {}
func (nopObserver) StepDone(int, []llm.Message, llm.Usage)                {}
