package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/usage"
)

const chatHelp = `Commands:
  /help          this list
  /reset         forget the conversation and start a new one
  /exit, /quit   leave (so do Ctrl-D, and Ctrl-C twice)
Ctrl-C stops the answer being written. The first question may start with
"in NAME:" to pick a repository. A line starting with // is a question
starting with /.
`

// chatCommand matches a line that is a command: a slash and a word. A
// question such as "/etc/hosts is read where?" is not one.
var chatCommand = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/[A-Za-z][A-Za-z0-9_-]*$`) })

// runChat keeps one conversation going until EOF, /exit, or a second
// Ctrl-C in a row. A Ctrl-C while an answer is being written stops that
// answer and returns to the prompt; the conversation keeps what the answer
// had found.
func runChat(ctx context.Context, cfg config.Config, env func(string) (string, bool), pathOnly bool, stdin io.Reader, out, errOut *screen) error {
	t, err := openTerminal(ctx, cfg, env, pathOnly, out, errOut)
	if err != nil {
		return err
	}
	defer t.core.Close()
	names := t.core.repos.Repos()
	pick := ""
	if len(names) > 1 {
		pick = fmt.Sprintf(" (start with \"in %s:\" to pick one)", names[1])
	}
	fmt.Fprintf(out, "Ask about %s%s (model %s). /help lists the commands; /exit or Ctrl-D quits.\n", strings.Join(names, ", "), pick, t.core.name)
	done := make(chan struct{})
	defer close(done)
	lines := readLines(stdin, done)
	quitting := false // the last thing that happened was a Ctrl-C
	for {
		out.style(bold, "> ")
		var in line
		select {
		case <-ctx.Done():
			fmt.Fprintln(out)
			return stopCause(ctx)
		case <-interrupts(ctx):
			fmt.Fprintln(out)
			if quitting {
				return nil
			}
			quitting = true
			out.style(dim, "(Ctrl-C again or Ctrl-D quits)")
			fmt.Fprintln(out)
			continue
		case in = <-lines:
		}
		if in.eof {
			fmt.Fprintln(out)
			return in.err
		}
		quitting = false
		q := strings.TrimSpace(in.text)
		switch {
		case q == "":
			continue
		case chatCommand().MatchString(q):
			if t.command(q) {
				return nil
			}
			continue
		case strings.HasPrefix(q, "//"):
			q = q[1:]
		}
		quitting = t.askInterruptibly(ctx, q)
		if ctx.Err() != nil {
			return stopCause(ctx)
		}
	}
}

// command runs a chat command; it reports whether the chat should end.
func (t *terminal) command(name string) (quit bool) {
	switch name {
	case "/exit", "/quit":
		return true
	case "/reset":
		t.reset()
		t.out.style(dim, "(new conversation)")
	case "/help":
		io.WriteString(t.out, chatHelp)
		return false
	default:
		t.errOut.style(red, fmt.Sprintf("unknown command %s; /help lists the commands", name))
		fmt.Fprintln(t.errOut)
		return false
	}
	fmt.Fprintln(t.out)
	return false
}

// askInterruptibly answers q, stopping at a Ctrl-C; it reports whether
// one stopped it.
func (t *terminal) askInterruptibly(ctx context.Context, q string) (interrupted bool) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := watchInterrupt(actx, cancel)
	err := t.ask(actx, q)
	stop()
	switch {
	case context.Cause(actx) == errInterrupted && err != nil:
		t.out.style(dim, "(stopped; Ctrl-C again or Ctrl-D quits)")
		fmt.Fprintln(t.out)
		return true
	case context.Cause(actx) == errInterrupted:
		// The answer was whole before the Ctrl-C was taken: it is one
		// at the prompt, and stopped nothing.
		t.out.style(dim, "(Ctrl-C again or Ctrl-D quits)")
		fmt.Fprintln(t.out)
		return true
	case errors.As(err, new(*usage.OverBudget)):
		// A refusal, not a failure: the sentence says why and until when.
		fmt.Fprintln(t.out, err.Error())
	case err != nil && ctx.Err() == nil:
		t.errOut.style(red, "error: "+err.Error())
		fmt.Fprintln(t.errOut)
	}
	return false
}

// line is one line of input, or its end.
type line struct {
	text string
	eof  bool
	err  error
}

// readLines reads stdin in its own goroutine, so a Ctrl-C can be taken
// while the chat waits for a line; it stops when done is closed.
func readLines(r io.Reader, done <-chan struct{}) <-chan line {
	ch := make(chan line)
	go func() {
		s := bufio.NewScanner(r)
		s.Buffer(make([]byte, 64*1024), 1<<20)
		for s.Scan() {
			select {
			case ch <- line{text: s.Text()}:
			case <-done:
				return
			}
		}
		select {
		case ch <- line{eof: true, err: s.Err()}:
		case <-done:
		}
	}()
	return ch
}
