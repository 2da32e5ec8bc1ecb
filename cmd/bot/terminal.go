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

// runAsk answers one question and exits.
func runAsk(ctx context.Context, cfg config.Config, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
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
	c, err := newCore(cfg, terminalLogger(cfg, stderr))
	if err != nil {
		return err
	}
	defer c.Close()
	t := newTerminal(stdout, stderr, c)
	_, err = t.turn(ctx, nil, question, cfg.ResolvedRepoName())
	return err
}

// runChat keeps one conversation going until EOF, /exit or Ctrl-C.
func runChat(ctx context.Context, cfg config.Config, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := newCore(cfg, terminalLogger(cfg, stderr))
	if err != nil {
		return err
	}
	defer c.Close()
	t := newTerminal(stdout, stderr, c)
	fmt.Fprintf(stdout, "Ask about %s (model %s). /reset starts over, /exit or Ctrl-D quits.\n", c.ws.Dir(), c.model)
	var history []llm.Message
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
			history = nil
			fmt.Fprintln(stdout, t.style(dim, "(new conversation)"))
			continue
		}
		turn, err := t.turn(ctx, history, q, cfg.ResolvedRepoName())
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			fmt.Fprintln(stderr, t.style(red, "error: "+err.Error()))
		}
		history = append(history, turn.Appended...)
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
}

func newTerminal(stdout, stderr io.Writer, c *core) *terminal {
	return &terminal{out: stdout, errOut: stderr, color: isTerminal(stdout), core: c}
}

func (t *terminal) style(code, s string) string {
	if !t.color {
		return s
	}
	return code + s + "\x1b[0m"
}

func (t *terminal) turn(ctx context.Context, history []llm.Message, question, repo string) (agent.Turn, error) {
	if t.core.demo && len(history) == 0 {
		fmt.Fprint(t.errOut, t.style(dim, demoNotice))
	}
	content := question
	if len(history) == 0 {
		content = agent.ContextPreamble(repo, "", time.Now(), "") + question
	}
	start := time.Now()
	turn, err := t.core.agent.Run(ctx, history, llm.Message{Role: llm.RoleUser, Content: content}, t)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return turn, nil
		}
		return turn, err
	}
	fmt.Fprintf(t.out, "\n%s\n\n", strings.TrimSpace(turn.Answer))
	fmt.Fprintln(t.out, t.style(dim, footer(turn, time.Since(start))))
	return turn, nil
}

func footer(turn agent.Turn, took time.Duration) string {
	s := fmt.Sprintf("%d steps · %d tool calls · %d tokens in", turn.Steps, turn.ToolCalls, turn.Usage.PromptTokens)
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
