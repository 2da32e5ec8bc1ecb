// Command bot answers questions about a repository: in Slack threads over
// Socket Mode (bot, bot serve), or in the terminal (bot ask, bot chat).
//
// main only builds a signal-aware context and calls run, which never exits
// the process, so tests can drive the whole program.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/repos"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := os.LookupEnv
	dot, err := config.DotEnv(".env")
	if errors.Is(err, fs.ErrNotExist) {
		dot, err = nil, nil
	}
	if err == nil {
		err = run(ctx, os.Args[1:], config.Over(env, dot), os.Stdin, os.Stdout, os.Stderr)
	}
	if err != nil {
		var usage usageError
		if !errors.As(err, &usage) || usage.msg != "" {
			fmt.Fprintln(os.Stderr, "bot:", err)
		}
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake in how the command was called; it exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

const usage = `bot answers questions about a code repository.

Usage:
  bot [serve] [flags]          serve Slack over Socket Mode (needs SLACK_BOT_TOKEN, SLACK_APP_TOKEN)
  bot ask [flags] "question"   answer one question in the terminal
  bot chat [flags]             ask several questions in one conversation
  bot sessions [flags]         list stored Slack thread sessions and their token totals

Settings come from .env, the environment and flags (see README.md).
Without OPENAI_API_KEY the demo model answers, so everything works offline.

Flags:
`

// run parses args and dispatches to a subcommand.
func run(ctx context.Context, args []string, env func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	fs, overrides := newFlagSet(cmd, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, errHelp) {
			return nil
		}
		return usageError{}
	}
	given := overrides()
	cfg, err := config.Load(env, given)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	// --repo DIR names one checkout: in the terminal it replaces the repos
	// of BOT_CONFIG; for serve, which answers for the channels those repos
	// are mapped to, it would silently do nothing, so it is refused.
	_, repoFlag := given["REPO_PATH"]
	switch cmd {
	case "ask":
		return runAsk(ctx, cfg, env, repoFlag, fs.Args(), stdin, stdout, stderr)
	case "chat":
		return runChat(ctx, cfg, env, repoFlag, stdin, stdout, stderr)
	case "serve":
		if fs.NArg() > 0 {
			return usageError{fmt.Sprintf("serve takes no arguments, got %q; to ask in the terminal: bot ask %q", fs.Args(), fs.Arg(0))}
		}
		if repoFlag && cfg.ConfigFile != "" {
			if specs, err := repos.LoadFile(cfg.ConfigFile); err == nil && len(specs) > 0 {
				return usageError{fmt.Sprintf("--repo conflicts with the repos in BOT_CONFIG (%s); serve answers about those, so drop --repo (or BOT_CONFIG's repos list to serve one checkout); to ask about %s alone: bot ask --repo %s", cfg.ConfigFile, cfg.RepoPath, cfg.RepoPath)}
			}
		}
		return runServe(ctx, cfg, env, stderr)
	case "sessions":
		return runSessions(ctx, cfg, stdout)
	case "help":
		fs.SetOutput(stdout)
		fs.Usage()
		return nil
	default:
		return usageError{fmt.Sprintf("unknown command %q; commands: serve, ask, chat, sessions, help", cmd)}
	}
}
