package turn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/budget"
	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
)

// ErrTakenOver means another process continued this turn (see
// session.Store.ContinueTurn): the store refused its steps, and its answer
// is the other process's to show.
var ErrTakenOver = errors.New("turn taken over by another process")

// Store is what a turn needs of the session store; session.Store has it.
type Store interface {
	Session(ctx context.Context, key session.Key) (session.Session, bool, error)
	StartTurn(ctx context.Context, t session.Turn, repo string, user llm.Message) error
	AppendStep(ctx context.Context, turnID string, msgs []llm.Message, usage llm.Usage) error
	ReplaceHistory(ctx context.Context, key session.Key, history []llm.Message) error
	SetCommit(ctx context.Context, key session.Key, commit string) error
}

var _ Store = session.Store(nil)

// Quota decides whether a new question may reach the model: nil admits
// it, an error refuses it (usage.Gate's *OverBudget is the sentence to
// show). usage.Gate has it.
type Quota interface {
	Admit(ctx context.Context, key session.Key, user, repo string) error
}

// Config is what every turn shares. Store, Agent.Model and Tools are
// required.
type Config struct {
	Store Store
	// Agent configures the loop of every turn (model, step limit, tool
	// timeout, in-turn compaction, logger); its Tools are set per turn.
	Agent agent.Config
	// Tools builds the tools over a lease: its workspace, and its
	// commit's code index (Lease.Index), and the tools offered where the
	// question was asked (Request.Channel); it may wait for those within
	// ctx, as the turn's first request needs them. It must give every
	// repository the same tools in the same order, so the tool
	// definitions sent with each request stay byte-identical and the
	// provider's prompt cache holds across turns, threads and
	// repositories.
	Tools func(ctx context.Context, l *repos.Lease, channel string) agent.Toolbox
	// Budget is the most prompt tokens a thread's history may take before
	// it is compacted, once, between turns (budget.Compact); 0 turns that
	// off. Calibrator (nil: one of the runner's own) learns from each
	// step's reported prompt tokens how far the estimate is off for Model.
	Budget     int
	Calibrator *budget.Calibrator
	Model      string
	// Quota, when set, is asked before each new question (not a resumed
	// one: a turn under way finishes).
	Quota Quota
	// Now is the clock of the preamble's date and the turn's start; nil
	// means time.Now.
	Now func() time.Time
}

// Runner runs turns. Build it with New; it is safe for concurrent use.
type Runner struct {
	cfg Config

	// names are the names of every tool a turn has offered, sorted: the
	// tools can differ by channel (Config.Tools).
	namesMu sync.Mutex
	names   atomic.Pointer[[]string]
}

// New checks cfg and builds a Runner.
func New(cfg Config) (*Runner, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("no session Store"))
	}
	if cfg.Agent.Model == nil {
		errs = append(errs, errors.New("no model"))
	}
	if cfg.Tools == nil {
		errs = append(errs, errors.New("no Tools: the runner cannot build the tools over a checkout"))
	}
	if cfg.Budget < 0 {
		errs = append(errs, errors.New("the context budget must not be negative (0 turns compaction off)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("turn runner config: %w", err)
	}
	if cfg.Calibrator == nil {
		cfg.Calibrator = &budget.Calibrator{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Runner{cfg: cfg}, nil
}

// Admit asks the Quota whether a new question in the thread key, from
// user, about repo may reach the model; nil without a Quota. Run asks it
// too: an adapter that asks first can refuse before it shows any work.
func (r *Runner) Admit(ctx context.Context, key session.Key, user, repo string) error {
	if r.cfg.Quota == nil {
		return nil
	}
	return r.cfg.Quota.Admit(ctx, key, user, repo)
}

// ModelName is the model's name, as configured.
func (r *Runner) ModelName() string { return r.cfg.Model }

// ToolNames are the names of the tools the turns so far offered the
// model, sorted; nil until the first turn has built them. The model may
// name any tool: only these exist.
func (r *Runner) ToolNames() []string {
	if p := r.names.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// Loaded is a thread's session as a turn starts from it.
type Loaded struct {
	Session session.Session
	Found   bool
}

// Load reads the thread's session, history and all. It is the turn's one
// read of it: the caller decides with it (which repository, whether the
// thread goes on) and passes it to Run or Resume.
func (r *Runner) Load(ctx context.Context, key session.Key) (Loaded, error) {
	s, ok, err := r.cfg.Store.Session(ctx, key)
	if err != nil {
		return Loaded{}, fmt.Errorf("load the thread's session: %w", err)
	}
	return Loaded{Session: s, Found: ok}, nil
}

// Request is one turn to run.
type Request struct {
	Key     session.Key
	Session Loaded // from Load, just before
	// Lease is the checkout the whole turn reads, at one commit; Repo is
	// its repository's name. The caller releases the lease after it has
	// shown the answer.
	Lease *repos.Lease
	Repo  string
	// Channel is where the question was asked, for the tools offered
	// only in some places: a Slack channel's ID (a direct message's
	// starts with D), or "" for the terminal.
	Channel string
	// Question is what was asked; User who asked it, named in a thread's
	// first message when not empty; MsgTS the message that asked.
	Question string
	User     string
	MsgTS    string
	TurnID   string
	// Continues is the ID of the cut-off turn this one finishes (Resume).
	Continues string
	Observer  Observer
	// Log carries the caller's keys for this turn (thread, turn, repo,
	// commit): the runner adds none of them. nil discards.
	Log *slog.Logger
	// Cut, when set, reports whether the turn is being cut off to be
	// picked up after a restart: a step it cuts is then stored without
	// its cancelled tool results, so the calls run again on resume.
	Cut func() bool
}

// Result is what a turn produced; Run and Resume fill it as far as the
// turn got, also on error.
type Result struct {
	// Answer is the answer as the model wrote it; Checked is it with its
	// citations checked at the lease's commit (CheckErr, when that failed:
	// Checked.Markdown is then the answer as written).
	Answer   string
	Checked  repos.Checked
	CheckErr error
	// Usage, Steps and ToolCalls are this turn's; ThreadUsage is the
	// thread's totals with this turn in them.
	Usage       llm.Usage
	ThreadUsage llm.Usage
	Steps       int
	ToolCalls   int
	HitMaxSteps bool
	// Tools are the names of the tools called, in order, a name once per
	// call (the model may name a tool that does not exist).
	Tools []string
	// Loop is the agent loop's own account of the turn: its Steps count
	// requests (an empty reply asked again is one more) and its ToolCalls
	// the calls asked for, refused repeats included.
	Loop agent.Turn
	// Started reports that the store has the turn (StartTurn succeeded,
	// or Resume continued it): the caller ends it there.
	Started bool
	// Compacted reports that the thread's history was compacted first.
	Compacted bool
}

// Run answers a new question of the thread: it builds the question's
// message, compacts the history if it is over the budget, records the turn
// as started and runs the agent over the lease.
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	req.Log = orDiscard(req.Log)
	// Before anything that may call the model, compaction included.
	if err := r.Admit(ctx, req.Key, req.User, req.Repo); err != nil {
		return Result{}, err
	}
	a, err := r.newAgent(ctx, req)
	if err != nil {
		return Result{}, err
	}
	sess := req.Session.Session
	user := llm.Message{Role: llm.RoleUser, Content: r.questionText(req)}
	history, compacted := r.compactHistory(ctx, req, a.Agent, sess.History, user)
	res := Result{Compacted: compacted}
	t := session.Turn{
		ID:       req.TurnID,
		Key:      req.Key,
		State:    session.TurnRunning,
		User:     req.User,
		Question: req.Question,
		Model:    r.cfg.Model,
		MsgTS:    req.MsgTS,
		Started:  r.cfg.Now(),
	}
	if err := r.cfg.Store.StartTurn(ctx, t, req.Repo, user); err != nil {
		return res, fmt.Errorf("record the start of a turn: %w", err)
	}
	res.Started = true
	if c := req.Lease.Commit; c != "" {
		r.setCommit(ctx, req, c)
	}
	return r.run(ctx, req, a, res, append(slices.Clip(history), user), func(ctx context.Context, obs agent.Observer) (agent.Turn, error) {
		return a.Run(ctx, history, user, obs)
	})
}

// questionText is the question as the model reads it: a thread's first
// carries the repository's context in front, and a follow-up at another
// commit than the last answer says the checkout moved.
func (r *Runner) questionText(req Request) string {
	sess, commit := req.Session.Session, req.Lease.Commit
	text := llm.QuestionText(req.Question)
	switch {
	case !req.Session.Found || len(sess.History) == 0:
		// Volatile facts go in front of the first question, not into the
		// system prompt, which must stay byte-identical to be cached.
		return agent.ContextPreamble(req.Repo, commit, r.cfg.Now(), req.User) + text
	case sess.Commit != "" && commit != "" && sess.Commit != commit:
		// The history quotes files as they were; the model must know
		// they may have changed since.
		return fmt.Sprintf("(The checkout moved from %s to %s since the last answer.)\n\n",
			gitexec.ShortCommit(sess.Commit), gitexec.ShortCommit(commit)) + text
	}
	return text
}

// run runs the agent with an observer that persists every step, and checks
// the answer's citations. sent is the history the first request sends
// (without the system prompt), for calibrating the estimator.
func (r *Runner) run(ctx context.Context, req Request, a loop, res Result, sent []llm.Message,
	loop func(context.Context, agent.Observer) (agent.Turn, error)) (Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rec := r.newRecorder(ctx, cancel, req, a, sent)
	t, err := loop(ctx, rec)
	res.Steps, res.ToolCalls, res.Usage = rec.totals()
	res.Tools = rec.calledTools()
	res.ThreadUsage = req.Session.Session.Usage.Add(res.Usage)
	res.HitMaxSteps, res.Loop = t.HitMaxSteps, t
	if perr := rec.persistErr(); err == nil && perr != nil {
		// The answer exists, but the thread's memory of it is broken:
		// say so instead of letting the next follow-up silently forget.
		err = perr
	}
	if errors.Is(context.Cause(ctx), ErrTakenOver) {
		return res, fmt.Errorf("turn %s: %w", req.TurnID, ErrTakenOver)
	}
	if err != nil {
		return res, err
	}
	return r.check(ctx, req, res, t.Answer), nil
}

// check checks the answer's citations at the lease's commit. It is not cut
// by a Stop that comes after the answer: the answer goes out either way.
func (r *Runner) check(ctx context.Context, req Request, res Result, answer string) Result {
	res.Answer = answer
	res.Checked, res.CheckErr = req.Lease.CheckAnswer(context.WithoutCancel(ctx), answer)
	return res
}

func (r *Runner) setCommit(ctx context.Context, req Request, commit string) {
	if err := r.cfg.Store.SetCommit(ctx, req.Key, commit); err != nil {
		req.Log.Warn("record a session's commit", "err", err)
	}
}

// loop is the agent of one turn and the tools it runs.
type loop struct {
	*agent.Agent
	tools agent.Toolbox
}

// newAgent builds the loop over the lease's workspace. Agents are cheap;
// every turn gets its own over the commit it leased.
func (r *Runner) newAgent(ctx context.Context, req Request) (loop, error) {
	cfg := r.cfg.Agent
	cfg.Tools = r.cfg.Tools(ctx, req.Lease, req.Channel)
	a, err := agent.New(cfg)
	if err != nil {
		return loop{}, fmt.Errorf("build the agent over %s: %w", req.Repo, err)
	}
	r.noteNames(a)
	return loop{Agent: a, tools: cfg.Tools}, nil
}

// noteNames adds the names of the tools a offers to ToolNames.
func (r *Runner) noteNames(a *agent.Agent) {
	_, specs := a.Prefix()
	var known []string
	if p := r.names.Load(); p != nil {
		known = *p
	}
	var added []string
	for _, s := range specs {
		if _, found := slices.BinarySearch(known, s.Name); !found {
			added = append(added, s.Name)
		}
	}
	if len(added) == 0 && known != nil {
		return
	}
	r.namesMu.Lock()
	defer r.namesMu.Unlock()
	var names []string
	if p := r.names.Load(); p != nil {
		names = slices.Clone(*p)
	}
	for _, s := range specs {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	r.names.Store(&names)
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
