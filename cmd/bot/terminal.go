package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/tools"
)

// runAsk answers one question and exits. pathOnly: the checkout was named
// by --repo and replaces the repos of BOT_CONFIG.
func runAsk(ctx context.Context, cfg config.Config, env func(string) (string, bool), pathOnly bool, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
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
	c, err := newCore(ctx, cfg, env, pathOnly, terminalLogger(cfg, stderr), nil)
	if err != nil {
		return err
	}
	defer c.Close()
	t := newTerminal(stdout, stderr, c)
	_, err = t.ask(ctx, question)
	return err
}

// runChat keeps one conversation going until EOF, /exit or Ctrl-C.
func runChat(ctx context.Context, cfg config.Config, env func(string) (string, bool), pathOnly bool, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := newCore(ctx, cfg, env, pathOnly, terminalLogger(cfg, stderr), nil)
	if err != nil {
		return err
	}
	defer c.Close()
	t := newTerminal(stdout, stderr, c)
	names := c.repos.Repos()
	pick := ""
	if len(names) > 1 {
		pick = fmt.Sprintf(" (start with \"in %s:\" to pick one)", names[1])
	}
	fmt.Fprintf(stdout, "Ask about %s%s (model %s). /reset starts over, /exit or Ctrl-D quits.\n", strings.Join(names, ", "), pick, c.name)
	lines := bufio.NewScanner(stdin)
	lines.Buffer(make([]byte, 64*1024), 1<<20)
	for {
		fmt.Fprint(stdout, t.style(bold, "> "))
		if !lines.Scan() {
			fmt.Fprintln(stdout)
			return lines.Err()
		}
		q := strings.TrimSpace(lines.Text())
		switch q {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/reset":
			t.reset()
			fmt.Fprintln(stdout, t.style(dim, "(new conversation)"))
			continue
		}
		_, err := t.ask(ctx, q)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			fmt.Fprintln(stderr, t.style(red, "error: "+err.Error()))
		}
	}
}

const (
	bold = "\x1b[1m"
	dim  = "\x1b[2m"
	red  = "\x1b[31m"
)

// terminal prints a turn: one line per tool call, its result summary, the
// answer and a footer. It is the agent's Observer for the terminal.
type terminal struct {
	out, errOut io.Writer
	color       bool
	core        *core
	mu          sync.Mutex

	// The conversation, as a Slack thread has it: bound to the repository
	// its first question picked, with the commit of its last answer.
	history []llm.Message
	repo    string
	commit  string
}

func (t *terminal) reset() { t.history, t.repo, t.commit = nil, "", "" }

func newTerminal(stdout, stderr io.Writer, c *core) *terminal {
	return &terminal{out: stdout, errOut: stderr, color: isTerminal(stdout), core: c}
}

func (t *terminal) style(code, s string) string {
	if !t.color {
		return s
	}
	return code + s + "\x1b[0m"
}

// ask answers one question of the conversation: over a lease on its
// repository, so the whole answer sees one commit, with its citations
// checked and linked at that commit as in Slack.
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
			fmt.Fprint(t.errOut, t.style(dim, demoNotice))
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
		content = fmt.Sprintf("(The checkout moved from %s to %s since the last answer.)\n\n", short(t.commit), short(lease.Commit)) + question
	}
	start := time.Now()
	turn, err := a.Run(ctx, t.history, llm.Message{Role: llm.RoleUser, Content: content}, t)
	t.history = append(t.history, turn.Appended...)
	t.commit = lease.Commit
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return turn, nil
		}
		return turn, err
	}
	answer, _, _, cerr := lease.Cite(ctx, strings.TrimSpace(turn.Answer))
	if cerr != nil {
		t.core.log.Warn("check the answer's citations; shown unchecked", "err", cerr)
	}
	fmt.Fprintf(t.out, "\n%s\n\n", answer)
	fmt.Fprintln(t.out, t.style(dim, footer(turn, time.Since(start), t.repo, lease.Commit)))
	return turn, nil
}

func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

func footer(turn agent.Turn, took time.Duration, repo, commit string) string {
	s := repo
	if commit != "" {
		s += "@" + short(commit)
	}
	s += fmt.Sprintf(" · %d steps · %d tool calls · %d tokens in", turn.Steps, turn.ToolCalls, turn.Usage.PromptTokens)
	if turn.Usage.CachedPromptTokens > 0 {
		s += fmt.Sprintf(" (%d cached)", turn.Usage.CachedPromptTokens)
	}
	return s + fmt.Sprintf(" · %d out · %.1fs", turn.Usage.CompletionTokens, took.Seconds())
}

// ToolStarted prints `⏺ name {args}`.
func (t *terminal) ToolStarted(step int, call tools.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	args := strings.TrimSpace(string(call.Input))
	if len(args) > 200 {
		args = args[:200] + "…"
	}
	fmt.Fprintf(t.out, "%s %s %s\n", t.style(bold, "⏺"), call.Name, args)
}

// ToolDone prints the one-line summary, dim, under its call.
func (t *terminal) ToolDone(step int, call tools.Call, res tools.Result, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mark := "✓"
	if res.IsError {
		mark = "✗"
	}
	fmt.Fprintln(t.out, t.style(dim, fmt.Sprintf("  ⎿ %s %s: %s", mark, call.Name, res.Summary)))
}

// StepDone has nothing to show in the terminal.
func (t *terminal) StepDone(int, []llm.Message, llm.Usage) {}
