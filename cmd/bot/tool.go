package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

// bot tool runs one tool the way the model's call runs it, to see what the
// model sees: the same set (tools.Default) in the same registry, with the
// same output limit and per-call timeout, over a lease on the checkout.
// Output is the result's content, as the model reads it.

// listTools prints every tool with the first sentence of its description.
// The definitions do not depend on a checkout, so none is opened.
func listTools(out io.Writer) error {
	reg := tools.NewRegistry(tools.Default(nil, tools.Options{})...)
	width := 0
	for _, n := range reg.Names() {
		width = max(width, len(n))
	}
	for _, d := range reg.Definitions() {
		fmt.Fprintf(out, "%-*s  %s\n", width, d.Name, firstSentence(d.Description))
	}
	fmt.Fprint(out, "\nRun one: bot tool NAME '{\"arg\": …}' (see bot tool --help).\n")
	return nil
}

// firstSentence is s up to the end of its first sentence: a ". " that
// does not end an abbreviation ("e.g. ").
func firstSentence(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	for from := 0; ; {
		i := strings.Index(s[from:], ". ")
		if i < 0 {
			return s
		}
		end := from + i + 1
		if !strings.HasSuffix(s[:end], "e.g.") && !strings.HasSuffix(s[:end], "i.e.") {
			return s[:end]
		}
		from = end
	}
}

// toolCall is the tool and arguments a command line names: NAME, and JSON
// arguments, "{}" when left out. What is not a known tool or not JSON is a
// usage error.
func toolCall(pos []string) (tools.Call, error) {
	reg := tools.NewRegistry(tools.Default(nil, tools.Options{})...)
	names := reg.Names()
	if len(pos) > 2 {
		return tools.Call{}, usageError{fmt.Sprintf(`bot tool takes a tool name and its arguments as one JSON object, got %d arguments; quote the JSON: bot tool search_code '{"pattern": "x"}'`, len(pos))}
	}
	name, args := pos[0], "{}"
	if len(pos) == 2 {
		args = pos[1]
	}
	if !slices.Contains(names, name) {
		return tools.Call{}, usageError{fmt.Sprintf("unknown tool %q; the tools are: %s (bot tool lists them)", name, strings.Join(names, ", "))}
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		return tools.Call{}, usageError{fmt.Sprintf(`the arguments of %s must be one JSON object with the keys %s (see bot tool): %v`, name, argKeys(reg, name), cmp.Or(err, fmt.Errorf("got %s", args)))}
	}
	return tools.Call{ID: "cli", Name: name, Input: json.RawMessage(args)}, nil
}

// argKeys names the arguments of tool name, from its schema.
func argKeys(reg *tools.Registry, name string) string {
	for _, d := range reg.Definitions() {
		if d.Name != name {
			continue
		}
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		_ = json.Unmarshal(d.Parameters, &schema)
		keys := slices.Sorted(maps.Keys(schema.Properties))
		return strings.Join(keys, ", ")
	}
	return ""
}

// toolTarget is the checkout a bot tool command names, and how to run it.
type toolTarget struct {
	pathOnly bool   // --repo DIR: that checkout, not BOT_CONFIG's
	repo     string // --in NAME: that repository of BOT_CONFIG ("" for the only one)
	local    bool   // --local: never hand the call to a running service
}

// runTool runs one tool call over the repository named by --in (or the
// only one configured) and prints its result. A bot serve running on the
// same data directory with the same settings runs it, when there is one
// (handToService). Otherwise it runs here, with the code index of the
// checkout's commit kept in BOT_DATA_DIR, building (or updating) it first
// when there is none, and saying so on a terminal (progress); when there
// is no index the tools scan, as they do in a turn whose index is not
// ready.
func runTool(ctx context.Context, cfg config.Config, env func(string) (string, bool), t toolTarget, pos []string, progress bool, out, errOut *screen) error {
	call, err := toolCall(pos)
	if err != nil {
		return err
	}
	log := terminalLogger(cfg, errOut)
	res, handed, err := handToService(ctx, cfg, env, t, call, dimLine(errOut, progress), log)
	if err != nil {
		return err
	}
	if !handed {
		if res, err = runToolHere(ctx, cfg, env, t, call, progress, log, errOut); err != nil {
			return err
		}
	}
	io.WriteString(out, res.Content)
	if !strings.HasSuffix(res.Content, "\n") {
		io.WriteString(out, "\n")
	}
	if res.IsError {
		return fmt.Errorf("%s failed: %s", call.Name, res.Summary)
	}
	return nil
}

// runToolHere runs call in this process, opening the checkout itself.
func runToolHere(ctx context.Context, cfg config.Config, env func(string) (string, bool), t toolTarget, call tools.Call, progress bool, log *slog.Logger, errOut *screen) (tools.Result, error) {
	// One call lives tens of milliseconds over a few megabytes of heap
	// (the saved index is mapped, not read in): collecting that heap as
	// often as a service must costs more than it frees, about a tenth of
	// a search's time on a large repository.
	debug.SetGCPercent(400)
	// A call that would not use the index (a file read, a pattern with no
	// literal to narrow by) loads none: that costs more than the call.
	cfg.Index = cfg.Index && usesIndex(call)
	c, err := newCore(ctx, cfg, env, t.pathOnly, log, nil, true)
	if err != nil {
		return tools.Result{}, err
	}
	defer c.Close()
	repo := t.repo
	if repo == "" {
		names := c.repos.Repos()
		if len(names) != 1 {
			return tools.Result{}, usageError{fmt.Sprintf("BOT_CONFIG lists %d repositories; pick one with --in NAME: %s", len(names), strings.Join(names, ", "))}
		}
		repo = names[0]
	}
	return c.runCall(ctx, repo, call, dimLine(errOut, progress))
}

// waitIndex waits for the code index of repo's current commit: loaded from
// BOT_DATA_DIR, or built (or updated from an earlier commit's) and saved
// there. A repository that gets none (not a git checkout) is left to the
// tools, which scan and say why. While one is built, say (if not nil) gets
// a line saying so, then how it ended.
func waitIndex(ctx context.Context, m *repos.Manager, repo string, say func(string)) error {
	start := time.Now()
	shown := false
	for _, h := range m.Health() {
		if say != nil && h.Name == repo && h.Index != nil && h.Index.State == repos.IndexBuilding {
			say(fmt.Sprintf("Indexing %s@%s…", repo, gitexec.ShortCommit(h.Index.Commit)))
			shown = true
		}
	}
	h, err := m.WaitIndex(ctx, repo)
	switch {
	case errors.Is(err, repos.ErrNoIndex):
		return nil
	case err != nil:
		return err
	case !shown:
	case h.State == repos.IndexReady:
		say(fmt.Sprintf(" %d files in %.1fs\n", h.Files, time.Since(start).Seconds()))
	default:
		say(" failed\n")
	}
	return nil
}

// dimLine shows progress on errOut, dim, at once; nil where there is no
// terminal to show it on.
func dimLine(errOut *screen, progress bool) func(string) {
	if !progress {
		return nil
	}
	return func(s string) {
		errOut.style(dim, s)
		errOut.Flush()
	}
}
