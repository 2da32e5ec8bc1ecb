package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
)

var errHelp = flag.ErrHelp

// newFlagSet declares the flags every subcommand accepts. A flag overrides
// the environment variable of the same meaning; overrides returns only the
// flags that were given, keyed by that variable's name, so config.Load can
// layer them last.
func newFlagSet(cmd string, stderr io.Writer) (*flag.FlagSet, func() map[string]string) {
	fs := flag.NewFlagSet("bot "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	type binding struct {
		env string
		val *string
	}
	var bound []binding
	str := func(name, env, help string) {
		v := new(string)
		fs.StringVar(v, name, "", help+" (overrides "+env+")")
		bound = append(bound, binding{env, v})
	}
	str("repo", "REPO_PATH", "checkout to answer about")
	str("model", "OPENAI_MODEL", "model name")
	str("base-url", "OPENAI_BASE_URL", "OpenAI-compatible API base URL")
	str("config", "BOT_CONFIG", "YAML settings file")
	str("data-dir", "BOT_DATA_DIR", "where durable state lives")
	str("http-addr", "BOT_HTTP_ADDR", "health and metrics listener")
	maxSteps := fs.Int("max-steps", 0, "model requests per answer (overrides BOT_MAX_STEPS)")
	verbose := fs.Bool("v", false, "log debug details to stderr (sets BOT_LOG_LEVEL=debug)")
	return fs, func() map[string]string {
		out := map[string]string{}
		seen := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { seen[f.Name] = true })
		for _, b := range bound {
			if *b.val != "" {
				out[b.env] = *b.val
			}
		}
		if seen["max-steps"] {
			out["BOT_MAX_STEPS"] = strconv.Itoa(*maxSteps)
		}
		if *verbose {
			out["BOT_LOG_LEVEL"] = "debug"
		}
		return out
	}
}
