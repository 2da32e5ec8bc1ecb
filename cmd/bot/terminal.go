package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tracing"
	"github.com/askrepo/askrepo/internal/turn"
)

// runAsk answers one question and exits. pathOnly: the checkout was named
// by --repo and replaces the repos of BOT_CONFIG. Ctrl-C stops the answer
// and ends the process with 130, as a shell expects of a program it
// interrupted.
func runAsk(ctx context.Context, cfg config.Config, env func(string) (string, bool), pathOnly bool, args []string, stdin io.Reader, out, errOut *screen) error {
	question := strings.TrimSpace(strings.Join(args, " "))
	if question == "" && !isTerminal(stdin) {
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
		if err != nil {
			return fmt.Errorf("read question from stdin: %w", err)
		}
		question = strings.TrimSpace(string(b))
	}
	if question == "" {
		return usageError{`ask needs a question, e.g. bot ask "what does this project do?"`}
	}
	t, err := openTerminal(ctx, cfg, env, pathOnly, out, errOut)
	if err != nil {
		return err
	}
	defer t.core.Close()
	err = t.ask(ctx, question)
	if ctx.Err() != nil {
		return stopCause(ctx)
	}
	return err
}

// terminal prints a turn: one line per tool call, its result summary, the
// answer as the model writes it, its checked citations and a footer. It
// is the turn's Observer for the terminal. All it prints goes through a
// screen, escaped.
type terminal struct {
	out, errOut *screen
	core        *core

	// The conversation is a thread as Slack has one, kept in a store of
	// its own in memory and run by the same runner: bound to the
	// repository its first question picked, with the commit of its last
	// answer. /reset starts a new thread.
	store  *session.Memory
	runner *turn.Runner
	key    session.Key
	convs  int

	mu sync.Mutex
	// streamed is the text of the model's current reply printed so far,
	// and attempt the try of the request it belongs to (see llm.WithText).
	streamed strings.Builder
	attempt  int
	midLine  bool // the cursor is not at the start of a line of out
}

// openTerminal opens the repositories and the model for the terminal. Its
// logger shows warnings only (everything with -v); each turn's outcome is
// the terminal's to print, so the agent's own summary line is left out.
func openTerminal(ctx context.Context, cfg config.Config, env func(string) (string, bool), pathOnly bool, out, errOut *screen) (*terminal, error) {
	level := slog.LevelWarn
	if cfg.LogLevel == "debug" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level}))
	// The terminal's tools scan: a question asked once should not start
	// a build of the whole repository, nor leave an index in BOT_DATA_DIR
	// of whatever directory it was asked from.
	cfg.Index = false
	c, err := newCore(ctx, cfg, env, pathOnly, log, nil, false)
	if err != nil {
		return nil, err
	}
	if level != slog.LevelDebug {
		c.agentLog = slog.New(slog.DiscardHandler)
	}
	t := &terminal{out: out, errOut: errOut, core: c, store: session.NewMemory()}
	if t.runner, err = c.newRunner(t.store); err != nil {
		c.Close()
		return nil, err
	}
	t.reset()
	return t, nil
}

// terminalTeam and terminalChannel name the terminal's conversations in
// its store, apart from any Slack thread.
const (
	terminalTeam    = "terminal"
	terminalChannel = "terminal"
)

func (t *terminal) reset() {
	t.convs++
	t.key = session.Key{Team: terminalTeam, Channel: terminalChannel, Thread: strconv.Itoa(t.convs)}
}

// ask answers one question of the conversation: over a lease on its
// repository, so the whole answer sees one commit, with its citations
// checked at that commit as in Slack. A cancelled ctx ends it with ctx's
// error, what was written so far left on the screen.
func (t *terminal) ask(ctx context.Context, question string) error {
	loaded, err := t.runner.Load(ctx, t.key)
	if err != nil {
		return err
	}
	repo := loaded.Session.Repo
	if !loaded.Found || len(loaded.Session.History) == 0 {
		r, q, err := t.core.repos.Choose(question)
		if err != nil {
			return err
		}
		// "in beta:" alone picks a repo but asks nothing; the model would
		// answer a blank question at full price.
		if q == "" {
			return usageError{fmt.Sprintf("ask needs a question after \"in %s:\", e.g. \"in %s: what does this project do?\"", r, r)}
		}
		repo, question = r, q
		if t.core.demo {
			t.errOut.style(dim, demoNotice)
		}
	}
	lease, err := t.core.repos.Acquire(ctx, repo)
	if err != nil {
		return err
	}
	defer lease.Release()
	start := time.Now()
	t.startTurn()
	id := newTurnID()
	ctx, span := t.core.tracer.StartTurn(ctx, tracing.Turn{Conversation: t.key.String(), Repo: repo, Question: question})
	res, err := t.runner.Run(llm.WithText(ctx, t.hear), turn.Request{
		Key: t.key, Session: loaded, Lease: lease, Repo: repo,
		Question: question, TurnID: id, Observer: t, Log: t.core.log,
	})
	span.End(res.Usage, err)
	t.endTurn(id, res, err)
	if err != nil {
		t.endLine()
		return err
	}
	notes := t.showAnswer(res, lease.Commit)
	if trace := span.TraceID(); trace != "" {
		notes = append(notes, "trace "+trace)
	}
	t.out.style(dim, footer(res, time.Since(start), repo, lease.Commit, notes))
	fmt.Fprintln(t.out)
	return nil
}

// endTurn records where a turn the store has ended, so the conversation's
// next question starts after it.
func (t *terminal) endTurn(id string, res turn.Result, err error) {
	if !res.Started {
		return
	}
	if err := t.store.EndTurn(context.Background(), id, turn.EndState(err), ""); err != nil {
		t.core.log.Warn("record the end of a turn", "err", err)
	}
}

// newTurnID names a turn in the terminal's store.
func newTurnID() string {
	p := make([]byte, 8)
	_, _ = rand.Read(p)
	return hex.EncodeToString(p)
}

// footer is the line under an answer; notes about its citations
// (repos.Checked) come last. Its counts are the loop's own (requests
// made, calls asked for).
func footer(res turn.Result, took time.Duration, repo, commit string, notes []string) string {
	s := repo
	if commit != "" {
		s += "@" + gitexec.ShortCommit(commit)
	}
	loop := res.Loop
	s += fmt.Sprintf(" · %d steps · %d tool calls · %d tokens in", loop.Steps, loop.ToolCalls, loop.Usage.PromptTokens)
	if loop.Usage.CachedPromptTokens > 0 {
		s += fmt.Sprintf(" (%d cached)", loop.Usage.CachedPromptTokens)
	}
	s += fmt.Sprintf(" · %d out · %.1fs", loop.Usage.CompletionTokens, took.Seconds())
	if loop.Retries > 0 {
		s += fmt.Sprintf(" · %d retried", loop.Retries)
	}
	for _, n := range notes {
		s += " · " + n
	}
	return s
}

// ToolStarted prints `⏺ name {args}`, after the text the model wrote
// before asking for it.
func (t *terminal) ToolStarted(c turn.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.streamed.Len() > 0 {
		t.endLineLocked()
		fmt.Fprintln(t.out)
		t.streamed.Reset()
	}
	t.out.style(bold, "⏺")
	fmt.Fprintf(t.out, " %s %s\n", oneLine(c.Name, 80), oneLine(c.Args, 200))
}

// oneLine is s, which the model wrote (a tool's name, its arguments, where
// JSON allows newlines between values), on one line of at most n runes:
// a newline in it could print lines that pass for the bot's own.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

// ToolDone prints the one-line summary, dim, under its call.
func (t *terminal) ToolDone(c turn.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mark := "✓"
	if c.Failed {
		mark = "✗"
	}
	t.out.style(dim, fmt.Sprintf("  ⎿ %s %s: %s", mark, oneLine(c.Name, 80), oneLine(c.Summary, 300)))
	fmt.Fprintln(t.out)
}

// StepDone has nothing to show in the terminal.
func (t *terminal) StepDone(turn.Step) {}

var _ turn.Observer = (*terminal)(nil)

// showAnswer prints what of the answer is not on the screen yet and its
// checked citations (see answer.go), and returns the notes about them for
// the footer.
func (t *terminal) showAnswer(res turn.Result, commit string) []string {
	answer := strings.TrimSpace(res.Answer)
	t.mu.Lock()
	streamed := strings.TrimSpace(t.streamed.String())
	t.mu.Unlock()
	if res.CheckErr != nil {
		t.core.log.Warn("check the answer's citations; shown unchecked", "err", res.CheckErr)
	}
	checked := res.Checked
	if rest, ok := strings.CutPrefix(answer, streamed); ok && streamed != "" {
		io.WriteString(t.out, rest)
		t.endLine()
		t.printCitations(checked.Results, commit)
		fmt.Fprintln(t.out)
		return checked.Notes
	}
	t.endLine()
	fmt.Fprintf(t.out, "\n%s\n\n", checked.Markdown)
	return checked.Notes
}
