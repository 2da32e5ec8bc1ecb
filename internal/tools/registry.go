package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultOutputLimit is the most bytes of one tool result the model gets
// (about 8k tokens).
const DefaultOutputLimit = 30 * 1024

// A tool that pages (read_file's offset, git_blame's start) tells the model
// where to go on, and that hint is only true if the model sees the whole
// page: a cut made after the tool has written it would skip what was cut
// for good. So the registry gives each call its output budget through the
// context, the tools size their pages and lists to it, and the registry's
// own cut is only a safety net, which says exactly what it dropped.

type outputBudgetKey struct{}

// WithOutputBudget returns ctx telling the tool run with it that its output
// may take at most n bytes.
func WithOutputBudget(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, outputBudgetKey{}, n)
}

// OutputBudget returns the bytes a tool's output may take: what the
// registry running it set with WithOutputBudget, else DefaultOutputLimit.
// A tool keeps a little of it for its notes and footers.
func OutputBudget(ctx context.Context) int {
	if n, ok := ctx.Value(outputBudgetKey{}).(int); ok && n > 0 {
		return n
	}
	return DefaultOutputLimit
}

// summaryLimit keeps Result.Summary to one short line.
const summaryLimit = 80

// RegistryOptions configures NewRegistryWith.
type RegistryOptions struct {
	// OutputLimit is the byte limit of one result; 0 means
	// DefaultOutputLimit.
	OutputLimit int
	Logger      *slog.Logger
}

// Registry hands the tool definitions to the model and runs its calls by
// name. It is filled once and then only read, so it is safe for concurrent
// use; Run may be called from several goroutines at once.
type Registry struct {
	tools map[string]Tool
	names []string // sorted
	limit int
	log   *slog.Logger
}

// NewRegistry returns a registry of tools with the default options.
func NewRegistry(tools ...Tool) *Registry {
	return NewRegistryWith(RegistryOptions{}, tools...)
}

// NewRegistryWith returns a registry of tools. Two tools with one name are
// a programming error and panic here, at startup, rather than shadowing
// each other later.
func NewRegistryWith(opts RegistryOptions, tools ...Tool) *Registry {
	r := &Registry{tools: make(map[string]Tool, len(tools)), limit: opts.OutputLimit, log: opts.Logger}
	if r.limit <= 0 {
		r.limit = DefaultOutputLimit
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "tools")
	for _, t := range tools {
		name := t.Definition().Name
		if _, dup := r.tools[name]; dup {
			panic(fmt.Sprintf("tools: two tools named %q", name))
		}
		r.tools[name] = t
		r.names = append(r.names, name)
	}
	slices.Sort(r.names)
	return r
}

// Names returns the tool names, sorted.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// Definitions returns the definitions sorted by name. The order must not
// change between turns: the tools are part of the request prefix, and a
// different order defeats the provider's prompt cache.
func (r *Registry) Definitions() []Definition {
	defs := make([]Definition, 0, len(r.names))
	for _, n := range r.names {
		defs = append(defs, r.tools[n].Definition())
	}
	return defs
}

// Run runs one call and always returns a result: an unknown tool, a tool
// error and even a panic become an error result the model can read, so one
// bad call never ends the conversation. The tool is told the output limit
// (see OutputBudget); output over it anyway is cut, as a last resort.
func (r *Registry) Run(ctx context.Context, call Call) (res Result) {
	res = Result{CallID: call.ID, Name: call.Name}
	t, ok := r.tools[call.Name]
	if !ok {
		res.IsError = true
		res.Content = fmt.Sprintf("unknown tool %q; the available tools are: %s", call.Name, strings.Join(r.names, ", "))
		res.Summary = "unknown tool"
		return res
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("tool panicked", "tool", call.Name, "panic", p, "stack", string(debug.Stack()))
			res.IsError = true
			res.Content = fmt.Sprintf("the %s tool failed unexpectedly (internal error: %v); try different arguments or another tool", call.Name, p)
			res.Summary = "internal error"
		}
	}()
	o, err := t.Run(WithOutputBudget(ctx, r.limit), call.Input)
	out := o.Text
	if err != nil {
		res.IsError = true
		res.Summary = errorSummary(err)
		msg := err.Error()
		if out != "" {
			msg = strings.TrimRight(out, "\n") + "\n\n" + msg
		}
		res.Content = r.truncate(call.Name, msg)
		return res
	}
	res.Refs = o.Refs
	if out == "" {
		res.Content = "(no output)"
		res.Summary = "no output"
		return res
	}
	if s, ok := t.(Summarizer); ok {
		res.Summary = oneLine(s.Summarize(out))
	} else {
		res.Summary = countLines(out)
	}
	res.Content = r.truncate(call.Name, out)
	return res
}

// truncate applies the safety net. A tool whose output needs it has not
// kept to its budget, which is worth a warning: the cut may hide what a
// hint of the tool points past.
func (r *Registry) truncate(tool, s string) string {
	if len(s) <= r.limit {
		return s
	}
	r.log.Warn("tool output over the limit; its middle was cut", "tool", tool, "bytes", len(s), "limit", r.limit)
	return truncateOutput(s, r.limit)
}

// errorSummary is the short line people see for a failed call. The wall's
// refusals get a fixed phrase so no path of the host can reach a Slack
// thread through them.
func errorSummary(err error) string {
	switch {
	case errors.Is(err, ErrOutside):
		return ErrOutside.Error()
	case errors.Is(err, ErrDenied):
		return ErrDenied.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return oneLine(err.Error())
}

// oneLine keeps the first line of s, cut to summaryLimit characters.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) <= summaryLimit {
		return s
	}
	rs := []rune(s)
	return strings.TrimSpace(string(rs[:summaryLimit-1])) + "…"
}

func countLines(s string) string {
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	if n == 1 {
		return "1 line"
	}
	return strconv.Itoa(n) + " lines"
}

// truncateOutput keeps the head and the tail of s within about limit bytes,
// cutting at line boundaries where it can, and says in the middle exactly
// what was cut: which lines and bytes of the output, so a reader can tell
// that a hint before or after the cut does not account for it.
func truncateOutput(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const noteRoom = 200
	budget := max(limit-noteRoom, 2)
	headEnd := budget * 2 / 3
	tailStart := len(s) - (budget - headEnd)
	// Prefer whole lines: end the head after a newline, start the tail
	// after one, unless that would throw away most of the budget.
	if i := strings.LastIndexByte(s[:headEnd], '\n'); i >= headEnd/2 {
		headEnd = i + 1
	} else {
		headEnd = runeStart(s, headEnd)
	}
	if i := strings.IndexByte(s[tailStart:], '\n'); i >= 0 && i < (len(s)-tailStart)/2 {
		tailStart += i + 1
	} else {
		tailStart = runeStart(s, tailStart)
	}
	totalLines := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		totalLines++
	}
	// Lines are counted from 1; a line the cut starts or ends inside
	// counts as cut.
	firstCut := strings.Count(s[:headEnd], "\n") + 1
	lastCut := strings.Count(s[:tailStart], "\n")
	if tailStart > 0 && s[tailStart-1] != '\n' {
		lastCut++
	}
	var b strings.Builder
	b.Grow(limit + noteRoom)
	b.WriteString(s[:headEnd])
	if !strings.HasSuffix(s[:headEnd], "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "… [cut: lines %d–%d (bytes %d–%d) of this output's %d lines / %d bytes, over the %s limit of a result; ask for less at a time to see them] …\n",
		firstCut, lastCut, headEnd+1, tailStart, totalLines, len(s), sizeText(limit))
	b.WriteString(s[tailStart:])
	return b.String()
}

// sizeText gives n bytes as "30 KB" when it is a whole number of KB.
func sizeText(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.Itoa(n>>10) + " KB"
	}
	return strconv.Itoa(n) + " bytes"
}

// runeStart moves i back to the start of the UTF-8 sequence it falls in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}
