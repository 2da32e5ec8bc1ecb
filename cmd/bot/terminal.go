package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
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
	_, err = t.ask(ctx, question)
	if ctx.Err() != nil {
		return stopCause(ctx)
	}
	return err
}

// terminal prints a turn: one line per tool call, its result summary, the
// answer as the model writes it, its checked citations and a footer. It is
// the agent's Observer for the terminal. All it prints goes through a
// screen, escaped.
type terminal struct {
	out, errOut *screen
	core        *core

	// The conversation, as a Slack thread has it: bound to the repository
	// its first question picked, with the commit of its last answer.
	history []llm.Message
	repo    string
	commit  string

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
	c, err := newCore(ctx, cfg, env, pathOnly, log, nil)
	if err != nil {
		return nil, err
	}
	if level != slog.LevelDebug {
		c.agentLog = slog.New(slog.DiscardHandler)
	}
	return &terminal{out: out, errOut: errOut, core: c}, nil
}

func (t *terminal) reset() { t.history, t.repo, t.commit = nil, "", "" }

// ask answers one question of the conversation: over a lease on its
// repository, so the whole answer sees one commit, with its citations
// checked at that commit as in Slack. A cancelled ctx ends it with ctx's
// error, what was written so far left on the screen.
func (t *terminal) ask(ctx context.Context, question string) (agent.Turn, error) {
	first := len(t.history) == 0
	if first {
		repo, q, err := t.core.repos.Choose(question)
		if err != nil {
			return agent.Turn{}, err
		}
		// "in beta:" alone picks a repo but asks nothing; the model would
		// answer a blank question at full price.
		if q == "" {
			return agent.Turn{}, usageError{fmt.Sprintf("ask needs a question after \"in %s:\", e.g. \"in %s: what does this project do?\"", repo, repo)}
		}
		t.repo, question = repo, q
		if t.core.demo {
			t.errOut.style(dim, demoNotice)
		}
	}
	lease, err := t.core.repos.Acquire(ctx, t.repo)
	if err != nil {
		return agent.Turn{}, err
	}
	defer lease.Release()
	a, err := t.core.newAgent(lease.Workspace)
	if err != nil {
		return agent.Turn{}, err
	}
	content := question
	switch {
	case first:
		content = agent.ContextPreamble(t.repo, lease.Commit, time.Now(), "") + question
	case t.commit != "" && lease.Commit != "" && t.commit != lease.Commit:
		content = fmt.Sprintf("(The checkout moved from %s to %s since the last answer.)\n\n", gitexec.ShortCommit(t.commit), gitexec.ShortCommit(lease.Commit)) + question
	}
	start := time.Now()
	t.startTurn()
	turn, err := a.Run(llm.WithText(ctx, t.hear), t.history, llm.Message{Role: llm.RoleUser, Content: content}, t)
	t.history = append(t.history, turn.Appended...)
	t.commit = lease.Commit
	if err != nil {
		t.endLine()
		return turn, err
	}
	notes := t.showAnswer(ctx, lease, turn.Answer)
	t.out.style(dim, footer(turn, time.Since(start), t.repo, lease.Commit, notes))
	fmt.Fprintln(t.out)
	return turn, nil
}

// footer is the line under an answer; notes about its citations
// (repos.Checked) come last.
func footer(turn agent.Turn, took time.Duration, repo, commit string, notes []string) string {
	s := repo
	if commit != "" {
		s += "@" + gitexec.ShortCommit(commit)
	}
	s += fmt.Sprintf(" · %d steps · %d tool calls · %d tokens in", turn.Steps, turn.ToolCalls, turn.Usage.PromptTokens)
	if turn.Usage.CachedPromptTokens > 0 {
		s += fmt.Sprintf(" (%d cached)", turn.Usage.CachedPromptTokens)
	}
	s += fmt.Sprintf(" · %d out · %.1fs", turn.Usage.CompletionTokens, took.Seconds())
	for _, n := range notes {
		s += " · " + n
	}
	return s
}

// ToolStarted prints `⏺ name {args}`, after the text the model wrote
// before asking for it.
func (t *terminal) ToolStarted(step int, call tools.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.streamed.Len() > 0 {
		t.endLineLocked()
		fmt.Fprintln(t.out)
		t.streamed.Reset()
	}
	t.out.style(bold, "⏺")
	fmt.Fprintf(t.out, " %s %s\n", oneLine(call.Name, 80), oneLine(string(call.Input), 200))
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
func (t *terminal) ToolDone(step int, call tools.Call, res tools.Result, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mark := "✓"
	if res.IsError {
		mark = "✗"
	}
	t.out.style(dim, fmt.Sprintf("  ⎿ %s %s: %s", mark, oneLine(call.Name, 80), oneLine(res.Summary, 300)))
	fmt.Fprintln(t.out)
}

// StepDone has nothing to show in the terminal.
func (t *terminal) StepDone(int, []llm.Message, llm.Usage) {}

var _ agent.Observer = (*terminal)(nil)

// showAnswer prints what of the answer is not on the screen yet and its
// checked citations (see answer.go), and returns the notes about them for
// the footer.
func (t *terminal) showAnswer(ctx context.Context, lease *repos.Lease, answer string) []string {
	answer = strings.TrimSpace(answer)
	t.mu.Lock()
	streamed := strings.TrimSpace(t.streamed.String())
	t.mu.Unlock()
	check := func() repos.Checked {
		checked, err := lease.CheckAnswer(ctx, answer)
		if err != nil {
			t.core.log.Warn("check the answer's citations; shown unchecked", "err", err)
		}
		return checked
	}
	if rest, ok := strings.CutPrefix(answer, streamed); ok && streamed != "" {
		io.WriteString(t.out, rest)
		t.endLine()
		checked := check()
		t.printCitations(checked.Results, lease.Commit)
		fmt.Fprintln(t.out)
		return checked.Notes
	}
	checked := check()
	t.endLine()
	fmt.Fprintf(t.out, "\n%s\n\n", checked.Markdown)
	return checked.Notes
}
