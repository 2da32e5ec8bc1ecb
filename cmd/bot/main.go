// Command bot answers questions about a repository: in Slack threads over
// Socket Mode (bot, bot serve), or in the terminal (bot ask, bot chat).
//
// main only builds a signal-aware context and calls run, which never exits
// the process, so tests can drive the whole program.
//
// This package wires the internal packages together and owns the command
// line; it holds no protocol of its own. It must not import slack-go (that
// is internal/slackbot's) or go-openai (internal/llm's): the import-rules
// test in internal keeps both true.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/termsafe"
)

func main() {
	// SIGTERM ends every command; Ctrl-C is the command's to interpret:
	// it stops bot ask and bot serve, and only the running answer of bot
	// chat.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	err := run(withInterrupts(ctx, intr), os.Args[1:], os.LookupEnv, os.Stdin, os.Stdout, os.Stderr)
	os.Exit(exitCode(os.Stderr, err))
}

// exitCode prints err, once and escaped (it may quote a server or a
// repository), and returns the process's exit status: 2 for a usage
// mistake, 128+N for a command stopped by signal N, 1 for anything else.
func exitCode(stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	if s, ok := errors.AsType[stopped](err); ok {
		return 128 + int(s.sig)
	}
	usage, isUsage := errors.AsType[usageError](err)
	if !isUsage || usage.msg != "" {
		io.WriteString(stderr, termsafe.String("bot: "+err.Error()+"\n"))
	}
	if isUsage {
		return 2
	}
	return 1
}

// usageError is a mistake in how the command was called; it exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// stopped is a command ended by a signal before it was done.
type stopped struct{ sig syscall.Signal }

func (e stopped) Error() string { return "stopped by " + e.sig.String() }

// command is a subcommand: how it is called, what it does, its flags.
type command struct {
	name, usage, about string
	flags              []string
	args               bool // takes arguments (the question)
}

var (
	terminalFlags = []string{"repo", "model", "base-url", "config", "data-dir", "max-steps", "env-file", "v"}
	commands      = []command{
		{"serve", "bot [serve] [flags]", "Serve Slack over Socket Mode: needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN (see README.md, \"In Slack\").\nSIGTERM or Ctrl-C stops taking questions and lets running answers finish.",
			[]string{"repo", "model", "base-url", "config", "data-dir", "http-addr", "max-steps", "env-file", "v"}, false},
		{"ask", `bot ask [flags] "question"`, "Answer one question about a repository in the terminal; without a question, it is read from stdin.\n\"in NAME: question\" picks a repository of BOT_CONFIG. Ctrl-C stops the answer (exit status 130).",
			terminalFlags, true},
		{"chat", "bot chat [flags]", "Ask several questions in one conversation. /help lists the chat commands;\nCtrl-C stops the answer being written, and Ctrl-C again or Ctrl-D quits.",
			terminalFlags, false},
		{"mcp", "bot mcp [flags]", "Serve the repositories to an MCP client (Claude Code, Cursor, …) over stdin and stdout: the read-only tools,\neach with a repo argument, and ask, which runs the whole agent. See README.md, \"askrepo as an MCP server\".",
			terminalFlags, false},
		{"tool", `bot tool [flags] [NAME ['{"arg": …}']]`, "Run one tool on the checkout and print exactly what the model would read; without a name, list the tools.\nThe checkout is REPO_PATH, --repo DIR, or the repository NAME of BOT_CONFIG with --in NAME.\nWhen bot serve runs on the same data directory with the same settings, it runs the call (--local: never).\nExit status 1 when the tool returns an error (printed), 2 for a mistake in the command line.",
			[]string{"repo", "in", "local", "config", "data-dir", "env-file", "v"}, true},
		{"sessions", "bot sessions [flags]", "List the stored Slack thread sessions, newest first, with their token totals.",
			[]string{"config", "data-dir", "env-file"}, false},
		{"feedback", "bot feedback [--since 7d] [--json] [flags]", "List the feedback people gave answers in Slack, newest first, with each answer's question,\nan excerpt of it, its repo and commit, and its tool calls, for review.",
			[]string{"since", "json", "config", "data-dir", "env-file"}, false},
		{"usage", "bot usage [--since 30d] [--by channel|user|repo|model] [--json]", "Report what the stored turns spent: answers, tokens (cached and uncached) and the cost estimated from\nthe price table of BOT_CONFIG (budgets.prices). Read from the store, so it covers every replica.",
			[]string{"since", "by", "json", "config", "data-dir", "env-file"}, false},
		{"healthcheck", "bot healthcheck [flags]", "Ask the running service's /healthz on BOT_HTTP_ADDR; exit status 0 when it answers 200.\nFor container health checks: it follows BOT_HTTP_ADDR, so no port is written twice.",
			[]string{"http-addr", "env-file"}, false},
		{"version", "bot version", "Print the version and commit the binary was built from (also bot --version).", nil, false},
		{"help", "bot help [command]", "Print the commands, or one command's flags (also bot COMMAND --help).", nil, true},
	}
)

const overview = `bot answers questions about a code repository.

Usage:
  bot [serve] [flags]          serve Slack over Socket Mode (needs SLACK_BOT_TOKEN, SLACK_APP_TOKEN)
  bot ask [flags] "question"   answer one question in the terminal
  bot chat [flags]             ask several questions in one conversation
  bot mcp [flags]              serve the tools and ask to an MCP client over stdio
  bot tool [NAME 'JSON']       run one tool on the checkout as the model would, or list the tools
  bot sessions [flags]         list stored Slack thread sessions and their token totals
  bot feedback [--since 7d]    list the 👍/👎 people gave answers, with what they rate
  bot usage [flags]            answers, tokens and estimated cost from the store, by channel, user, repo or model
  bot healthcheck [flags]      ask a running service's /healthz (for container health checks)
  bot version                  print the version and commit (also --version)
  bot help [command]           this text, or a command's flags (also bot COMMAND --help)

Settings come from the environment, a .env file and flags (see README.md).
Without OPENAI_API_KEY the demo model answers, so everything works offline.
`

func commandNamed(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// splitCommand takes the command off args: none, or flags first, is serve.
func splitCommand(args []string) (string, []string) {
	if len(args) == 0 {
		return "serve", args
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return "help", args[1:]
	case "-version", "--version":
		return "version", args[1:]
	}
	if args[0] != "" && args[0][0] == '-' {
		return "serve", args
	}
	return args[0], args[1:]
}

// run parses args and dispatches to a subcommand. env is the process
// environment; the .env file to layer under it is chosen here (chooseEnv).
// Everything printed goes through a screen, escaped.
func run(ctx context.Context, args []string, env func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) error {
	out, errOut := newScreen(stdout, env), newScreen(stderr, env)
	defer out.Flush()
	defer errOut.Flush()
	name, args := splitCommand(args)
	cmd, ok := commandNamed(name)
	if !ok {
		return usageError{fmt.Sprintf("unknown command %q; commands: serve, ask, chat, mcp, tool, sessions, feedback, usage, healthcheck, version, help", name)}
	}
	fl := newFlags(cmd)
	pos, err := fl.parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fl.printHelp(out)
		return nil
	case err != nil:
		return fl.usageOf(err)
	case len(pos) > 0 && name == "serve":
		return usageError{fmt.Sprintf("serve takes no arguments, got %q; to ask in the terminal: bot ask %q", pos, pos[0])}
	case len(pos) > 0 && !cmd.args:
		return usageError{fmt.Sprintf("bot %s takes no arguments, got %q; see bot %s --help", name, pos, name)}
	}
	switch name {
	case "help":
		return help(out, pos)
	case "version":
		printVersion(out)
		return nil
	case "tool":
		if len(pos) == 0 {
			return listTools(out)
		}
	}
	given := fl.given()
	env, err = chooseEnv(env, given, fl.envFile, errOut)
	if err != nil {
		return err
	}
	// --repo DIR names one checkout: in the terminal it replaces the repos
	// of BOT_CONFIG; for serve, which answers for the channels those repos
	// are mapped to, it would silently do nothing, so it is refused.
	_, repoFlag := given["REPO_PATH"]
	if name == "healthcheck" {
		cfg, err := config.Load(env, given)
		if err != nil {
			return err
		}
		return runHealthcheck(ctx, cfg, out)
	}
	_, report := storeReports[name]
	cfg, err := loadConfig(env, given, !report, repoFlag)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if name != "chat" {
		go cancelOnInterrupt(ctx, cancel)
	}
	switch name {
	case "ask":
		return runAsk(ctx, cfg, env, repoFlag, pos, stdin, out, errOut)
	case "tool":
		if repoFlag && fl.in != "" {
			return usageError{"--repo and --in both name the checkout; give one"}
		}
		return runTool(ctx, cfg, env, toolTarget{pathOnly: repoFlag, repo: fl.in, local: fl.local}, pos, isTerminal(stderr), out, errOut)
	case "chat":
		return runChat(ctx, cfg, env, repoFlag, stdin, out, errOut)
	case "mcp":
		return runMCP(ctx, cfg, env, repoFlag, stdin, stdout, errOut)
	}
	if report {
		return storeReports[name](ctx, cfg, fl, out)
	}
	if err := serveRepoFlag(cfg, repoFlag); err != nil {
		return err
	}
	return runServe(ctx, cfg, env, errOut)
}

// serveRepoFlag refuses --repo beside BOT_CONFIG's repos for serve, which
// answers for the channels those repos are mapped to: there it would
// silently do nothing.
func serveRepoFlag(cfg config.Config, repoFlag bool) error {
	if repoFlag && cfg.ConfigFile != "" {
		if specs, err := repos.LoadFile(cfg.ConfigFile); err == nil && len(specs) > 0 {
			return usageError{fmt.Sprintf("--repo conflicts with the repos in BOT_CONFIG (%s); serve answers about those, so drop --repo (or BOT_CONFIG's repos list to serve one checkout); to ask about %s alone: bot ask --repo %s", cfg.ConfigFile, cfg.RepoPath, cfg.RepoPath)}
		}
	}
	return nil
}

// storeReports are the commands that only read the session store: they
// need no repository, and create no store that is not there.
var storeReports = map[string]func(context.Context, config.Config, *flags, io.Writer) error{
	"sessions": func(ctx context.Context, cfg config.Config, _ *flags, out io.Writer) error {
		return runSessions(ctx, cfg, out)
	},
	"feedback": func(ctx context.Context, cfg config.Config, fl *flags, out io.Writer) error {
		return runFeedback(ctx, cfg, cmp.Or(fl.since, "7d"), fl.json, out)
	},
	"usage": func(ctx context.Context, cfg config.Config, fl *flags, out io.Writer) error {
		return runUsage(ctx, cfg, reportFlags{since: cmp.Or(fl.since, "30d"), by: fl.by, json: fl.json}, out)
	},
}

// help prints the overview, or one command's help.
func help(out io.Writer, args []string) error {
	if len(args) == 0 {
		io.WriteString(out, overview)
		return nil
	}
	cmd, ok := commandNamed(args[0])
	if !ok || len(args) > 1 {
		return usageError{fmt.Sprintf("bot help takes one command name, got %q; commands: serve, ask, chat, mcp, tool, sessions, feedback, usage, healthcheck, version, help", args)}
	}
	newFlags(cmd).printHelp(out)
	return nil
}

// loadConfig loads the settings and, for commands that open repositories,
// checks those too, and reports every problem a start can find at once.
func loadConfig(env func(string) (string, bool), given map[string]string, withRepos, pathOnly bool) (config.Config, error) {
	cfg, err := config.Load(env, given)
	if withRepos {
		err = errors.Join(err, checkRepos(cfg, env, pathOnly, err))
	}
	if err != nil {
		return cfg, configError(err)
	}
	return cfg, nil
}
