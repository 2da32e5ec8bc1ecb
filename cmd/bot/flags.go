package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// flagSpec is one command-line flag. A flag with an env overrides that
// environment variable; config.Load layers it last.
type flagSpec struct {
	name, env, arg, help string
}

var flagSpecs = []flagSpec{
	{"repo", "REPO_PATH", "DIR", "checkout to answer about, instead of the repos of BOT_CONFIG"},
	{"model", "OPENAI_MODEL", "NAME", "model name"},
	{"base-url", "OPENAI_BASE_URL", "URL", "OpenAI-compatible API base URL, usually ending in /v1"},
	{"config", "BOT_CONFIG", "FILE", "YAML settings file"},
	{"data-dir", "BOT_DATA_DIR", "DIR", "where durable state and cloned repositories live"},
	{"http-addr", "BOT_HTTP_ADDR", "ADDR", "listener for /healthz, /metrics and /mcp"},
	{"max-steps", "BOT_MAX_STEPS", "N", "model requests per answer"},
	{"in", "", "NAME", "the repository of BOT_CONFIG to run on (bot tool)"},
	{"since", "", "AGE", "how far back to look, in days (7d) or as a Go duration (36h); default 7d for bot feedback, 30d for bot usage"},
	{"by", "", "GROUP", "one line per channel, user, repo or model (bot usage; default one line)"},
	{"json", "", "", "print JSON instead of text"},
	{"local", "", "", "run the tool in this process, not in a bot serve running on the same data directory (bot tool)"},
	{"env-file", "", "FILE", "read settings from this .env file; without it ./.env is read unless it is inside a repository being answered about"},
	{"v", "", "", "log debug details to stderr (sets BOT_LOG_LEVEL=debug)"},
}

// flags is one command's flags, parsed.
type flags struct {
	cmd     command
	fs      *flag.FlagSet
	envFile string
	in      string // --in: a repository of BOT_CONFIG by name
	since   string // --since: how far back bot feedback and bot usage look; empty for their own default
	json    bool   // --json: print JSON instead of text
	local   bool   // --local: bot tool runs the call itself
	verbose bool
	by      string // --by: bot usage's grouping
}

func newFlags(cmd command) *flags {
	f := &flags{cmd: cmd, fs: flag.NewFlagSet("bot "+cmd.name, flag.ContinueOnError)}
	f.fs.SetOutput(io.Discard) // errors are returned, help is printed by help
	for _, s := range flagSpecs {
		if !slices.Contains(cmd.flags, s.name) {
			continue
		}
		switch s.name {
		case "v":
			f.fs.BoolVar(&f.verbose, s.name, false, s.help)
		case "env-file":
			f.fs.StringVar(&f.envFile, s.name, "", s.help)
		case "in":
			f.fs.StringVar(&f.in, s.name, "", s.help)
		case "since":
			f.fs.StringVar(&f.since, s.name, "", s.help)
		case "by":
			f.fs.StringVar(&f.by, s.name, "", s.help)
		case "json":
			f.fs.BoolVar(&f.json, s.name, false, s.help)
		case "local":
			f.fs.BoolVar(&f.local, s.name, false, s.help)
		default:
			f.fs.String(s.name, "", s.help)
		}
	}
	return f
}

// parse parses flags anywhere among args, as people type them
// (bot ask "q" --repo X), and returns the other arguments in order. A "--"
// ends the flags: what follows is taken as it is, so a question may start
// with "-".
func (f *flags) parse(args []string) ([]string, error) {
	var rest []string
	for {
		if err := f.fs.Parse(args); err != nil {
			return nil, err
		}
		left := f.fs.Args()
		if len(left) == 0 {
			return rest, nil
		}
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" && !f.isValue(args, used-1) {
			return append(rest, left...), nil
		}
		rest, args = append(rest, left[0]), left[1:]
	}
}

// isValue reports whether args[i] is the value of the flag before it
// (--repo --), not the end of the flags.
func (f *flags) isValue(args []string, i int) bool {
	if i == 0 {
		return false
	}
	name := strings.TrimLeft(args[i-1], "-")
	if !strings.HasPrefix(args[i-1], "-") || strings.Contains(name, "=") {
		return false
	}
	fl := f.fs.Lookup(name)
	if fl == nil {
		return false
	}
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// given returns the flags that were set, keyed by the environment variable
// they override.
func (f *flags) given() map[string]string {
	out := map[string]string{}
	f.fs.Visit(func(fl *flag.Flag) {
		if s := specFor(fl.Name); s.env != "" {
			out[s.env] = fl.Value.String()
		}
	})
	if f.verbose {
		out["BOT_LOG_LEVEL"] = "debug"
	}
	return out
}

func specFor(name string) flagSpec {
	i := slices.IndexFunc(flagSpecs, func(s flagSpec) bool { return s.name == name })
	if i < 0 {
		return flagSpec{}
	}
	return flagSpecs[i]
}

// usageOf explains a parse error: which flag, and where to read about them.
func (f *flags) usageOf(err error) usageError {
	msg := fmt.Sprintf("%s: %v; see bot %s --help", f.cmd.name, err, f.cmd.name)
	if f.cmd.name == "ask" {
		msg += `; a question that starts with "-" goes after --: bot ask -- "-v does what?"`
	}
	return usageError{msg}
}

// printHelp prints the command's usage, what it does, and its flags.
func (f *flags) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", f.cmd.usage, f.cmd.about)
	if len(f.cmd.flags) == 0 {
		return
	}
	fmt.Fprintln(w, "\nFlags:")
	for _, s := range flagSpecs {
		if !slices.Contains(f.cmd.flags, s.name) {
			continue
		}
		left := "--" + s.name
		if s.name == "v" {
			left = "-v"
		}
		if s.arg != "" {
			left += " " + s.arg
		}
		help := s.help
		if s.env != "" {
			help += " (overrides " + s.env + ")"
		}
		fmt.Fprintf(w, "  %-18s %s\n", left, help)
	}
	switch {
	case f.cmd.name == "tool":
		fmt.Fprintln(w, "\nFlags may come before or after the tool's name and arguments; -- ends them.")
	case f.cmd.args:
		fmt.Fprintln(w, "\nFlags may come before or after the question; -- ends them.")
	}
}

// parseSince reads --since (bot feedback, bot usage): days as "7d", or a Go duration ("36h").
func parseSince(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
		if n > 100*365 {
			d = 0 // past a century the duration overflows
		}
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--since %q is not an age: give days (7d) or a Go duration (36h)", s)
	}
	return d, nil
}
