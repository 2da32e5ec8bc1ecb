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
	// Retries counts the model requests sent again after a transient
	// failure (a 429, a 5xx, a broken stream), over the turn's steps.
	Retries int
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

type nopObserver struct{}

func (nopObserver) ToolStarted(int, tools.Call)                           {}
func (nopObserver) ToolDone(int, tools.Call, tools.Result, time.Duration) {}
func (nopObserver) StepDone(int, []llm.Message, llm.Usage)                {}
