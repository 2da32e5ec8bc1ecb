package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/askrepo/askrepo/internal/search"
	"github.com/bmatcuk/doublestar/v4"
)

// SearchCodeName is the name the model calls the content search by.
const SearchCodeName = "search_code"

//go:embed desc/search_code.md
var searchCodeDescription string

const (
	// DefaultSearchTimeout bounds one search. A pattern with no literal
	// part costs about 1–1.5 s per 100 MB in Go's regexp; ten seconds
	// covers a large repository and still leaves the turn responsive.
	DefaultSearchTimeout = 10 * time.Second
	// DefaultSearchMaxFileSize: larger files are generated code, data or
	// bundles, rarely what a question is about, and slow to scan.
	DefaultSearchMaxFileSize = 2 << 20

	defaultMaxResults = 100
	maxMaxResults     = 500
	maxContextLines   = 5
	// searchNoteRoom is kept out of the output budget (OutputBudget) for
	// the header and the notes; the matches shown fill the rest, so the
	// tool cuts at a match and says so, rather than the registry cutting
	// the middle out.
	searchNoteRoom = 2 << 10
)

// SearchCodeOptions configures search_code (Options.Search). The zero
// value gives the defaults.
type SearchCodeOptions struct {
	// Timeout bounds one search; when it passes, the matches found so far
	// are returned, marked as partial. Zero means DefaultSearchTimeout.
	Timeout time.Duration
	// MaxFileSize is the largest file searched, in bytes; larger ones are
	// skipped and counted. Zero means DefaultSearchMaxFileSize.
	MaxFileSize int64
	// Workers is how many files are searched at once. Zero means
	// GOMAXPROCS.
	Workers int
}

// SearchCode is the search_code tool: an in-process grep over the
// workspace's listable files (git's ignore rules, no deny-listed files),
// fast enough to stand in for ripgrep. It is safe for concurrent use.
type SearchCode struct {
	ws    *Workspace
	opts  SearchCodeOptions
	index IndexSource      // narrows the files read; nil scans them all
	now   func() time.Time // the budget clock; tests step it per file
	// indexed caches the file set of the last index asked (see
	// indexedFiles).
	indexed atomic.Pointer[indexedSet]
}

// NewSearchCode returns the search_code tool over ws, configured by
// opts.Search, reading only the files opts.Index says may match when it
// gives an index.
func NewSearchCode(ws *Workspace, all Options) *SearchCode {
	opts := all.Search
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultSearchTimeout
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultSearchMaxFileSize
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	return &SearchCode{ws: ws, opts: opts, index: all.Index, now: time.Now}
}

// Describe implements Describer: "\"retry\" in internal/ (*.go)", then
// the options given, "ignore_case max_results=20".
func (s *SearchCode) Describe(input json.RawMessage) string {
	f, _ := parseArgsForm(input)
	var b strings.Builder
	patternIn(&b, f.str("pattern"), f.str("path"))
	include := f.str("include")
	if include != "" {
		b.WriteString(" (" + include + ")")
	}
	return f.rest(&b)
}

type searchCodeArgs struct {
	Pattern    string `json:"pattern"`
	Literal    bool   `json:"literal"`
	IgnoreCase bool   `json:"ignore_case"`
	Path       string `json:"path"`
	Include    string `json:"include"`
	Context    int    `json:"context"`
	MaxResults int    `json:"max_results"`
}

var searchCodeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "RE2 regular expression (Go syntax), or exact text when literal is true"},
    "literal": {"type": "boolean", "description": "treat pattern as exact text, not a regular expression (default false)"},
    "ignore_case": {"type": "boolean", "description": "match regardless of case (default false)"},
    "path": {"type": "string", "description": "directory or file to search, relative to the repository root (default: the whole repository)"},
    "include": {"type": "string", "description": "only files matching this glob: \"*.go\" matches file names anywhere, a glob with a slash such as \"cmd/**/*_test.go\" matches paths"},
    "context": {"type": "integer", "minimum": 0, "maximum": 5, "description": "lines of context before and after each match (default 0)"},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 500, "description": "most matching lines to show (default 100)"}
  },
  "required": ["pattern"]
}`)

// Definition implements Tool.
func (s *SearchCode) Definition() Definition {
	return Definition{Name: SearchCodeName, Description: searchCodeDescription, Parameters: searchCodeSchema}
}

// Run implements Tool. What the model can fix (a bad pattern, a wrong path)
// comes back as an error that says what to change; a timeout is not an
// error but a partial result that says so.
func (s *SearchCode) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[searchCodeArgs](input)
	if err != nil {
		return Output{}, err
	}
	notes, err := args.check()
	if err != nil {
		return Output{}, err
	}
	m, err := search.Compile(args.Pattern, args.Literal, args.IgnoreCase)
	if errors.Is(err, search.ErrTooComplex) {
		return Output{}, err
	}
	if err != nil {
		return Output{}, patternError(args.Pattern, err)
	}

	// The call's own deadline may come first; the partial note then names
	// the time the search really had.
	budget := s.opts.Timeout
	if dl, ok := ctx.Deadline(); ok {
		budget = max(0, min(budget, time.Until(dl)))
	}
	deadline := s.now().Add(budget)
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	scope, filter, err := s.prepare(ctx, args.Path, budget)
	if err != nil {
		return Output{}, err
	}
	idx, _ := codeIndex(s.index)
	readers, closeRoot := s.readers(idx)
	defer closeRoot()
	files, widen := s.narrow(idx, m, filterInclude(scope.files, args.Include))
	job := search.Job{
		Files:        files,
		NewReader:    filter.wrap(readers),
		Matcher:      m,
		ContextLines: args.Context,
		MaxResults:   args.MaxResults,
		MaxFileSize:  s.opts.MaxFileSize,
		Workers:      s.opts.Workers,
		Expired:      func() bool { return s.now().After(deadline) },
	}
	res := widen(job.Run(ctx))
	if !res.Complete && errors.Is(ctx.Err(), context.Canceled) {
		return Output{}, fmt.Errorf("search canceled: %w", ctx.Err())
	}
	text, refs := renderSearch(args, scope, res, s.opts, roundBudget(budget), OutputBudget(ctx)-searchNoteRoom, notes)
	return Output{Text: text, Refs: refs}, nil
}

// check refuses what the model must fix and caps what it asked too much
// of, with a note for each cap.
func (a *searchCodeArgs) check() (notes []string, err error) {
	switch {
	case a.Pattern == "":
		return nil, errors.New(`"pattern" is empty; give a word or a regular expression to search for, e.g. {"pattern": "func NewServer"}`)
	case a.Context < 0:
		return nil, fmt.Errorf(`"context" must be between 0 and %d lines, not %d`, maxContextLines, a.Context)
	case a.MaxResults < 0:
		return nil, fmt.Errorf(`"max_results" must be between 1 and %d, not %d; leave it out for %d`, maxMaxResults, a.MaxResults, defaultMaxResults)
	case a.Include != "" && !doublestar.ValidatePattern(a.Include):
		return nil, fmt.Errorf(`"include" %q is not a valid glob; use e.g. "*.go" (file names anywhere) or "internal/**/*_test.go" (paths)`, a.Include)
	}
	if err := checkGlobCost("include", a.Include); err != nil {
		return nil, err
	}
	if a.Context > maxContextLines {
		notes = append(notes, fmt.Sprintf("context is capped at %d lines.", maxContextLines))
		a.Context = maxContextLines
	}
	if a.MaxResults == 0 {
		a.MaxResults = defaultMaxResults
	}
	if a.MaxResults > maxMaxResults {
		notes = append(notes, fmt.Sprintf("max_results is capped at %d.", maxMaxResults))
		a.MaxResults = maxMaxResults
	}
	return notes, nil
}

// prepare lists the files under p and the secret blobs to keep out. The
// secret blobs come from git's history, the file list from the index and
// the tree: the two are independent, so they are fetched side by side.
// Both end with ctx, and the call waits for both; budget is the time ctx
// gave them, for the error when it ran out.
func (s *SearchCode) prepare(ctx context.Context, p string, budget time.Duration) (searchScope, secretFilter, error) {
	type secretsResult struct {
		filter secretFilter
		err    error
	}
	secretsc := make(chan secretsResult, 1)
	go func() {
		f, err := s.ws.secretFilter(ctx)
		secretsc <- secretsResult{f, err}
	}()
	scope, err := s.scope(ctx, p)
	sr := <-secretsc
	if err != nil {
		if ctx.Err() != nil {
			return searchScope{}, secretFilter{}, fmt.Errorf("search: listing the files took longer than %s: %w", roundBudget(budget), ctx.Err())
		}
		return searchScope{}, secretFilter{}, err
	}
	if sr.err != nil {
		return searchScope{}, secretFilter{}, sr.err
	}
	return scope, sr.filter, nil
}

// roundBudget rounds a time budget for the model to read.
func roundBudget(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// searchScope is the set of files a search covers and how to describe it.
type searchScope struct {
	files []string
	where string // "" for the whole repository, else the relative path
}

// scope lists the files under p: the whole listable set for the root, one
// file, or a directory's files. A file named explicitly is searched even
// if it is ignored by git, as rg does: the model asked for it, and the
// deny-list is still enforced by Open.
func (s *SearchCode) scope(ctx context.Context, p string) (searchScope, error) {
	rel, err := s.ws.Rel(p)
	if err != nil {
		return searchScope{}, err
	}
	all, err := s.ws.Files(ctx)
	if err != nil {
		return searchScope{}, fmt.Errorf("search: list files: %w", err)
	}
	if rel == "." {
		return searchScope{files: all}, nil
	}
	if _, found := slices.BinarySearch(all, rel); found {
		return searchScope{files: []string{rel}, where: rel}, nil
	}
	prefix := rel + "/"
	lo, _ := slices.BinarySearch(all, prefix)
	hi := lo
	for hi < len(all) && strings.HasPrefix(all[hi], prefix) {
		hi++
	}
	if hi > lo {
		return searchScope{files: all[lo:hi], where: rel}, nil
	}
	f, _, err := s.ws.Open(rel)
	switch {
	case err == nil:
		f.Close()
		return searchScope{files: []string{rel}, where: rel}, nil
	case errors.Is(err, fs.ErrNotExist):
		return searchScope{}, fmt.Errorf("path %q does not exist; use list_files or glob to find the right path, or leave path out to search the whole repository", p)
	case errors.Is(err, ErrNotRegular):
		return searchScope{}, fmt.Errorf("path %q has no searchable files: what it holds is ignored by .gitignore or on the deny-list; search another path or the whole repository", p)
	}
	return searchScope{}, err
}

// filterInclude keeps the files matching glob. A glob without a slash
// matches the file name, so "*.go" finds Go files at any depth, which is
// what people (and models) mean by it.
func filterInclude(files []string, glob string) []string {
	if glob == "" {
		return files
	}
	byName := !strings.Contains(glob, "/")
	var out []string
	for _, f := range files {
		name := f
		if byName {
			name = path.Base(f)
		}
		if doublestar.MatchUnvalidated(glob, name) {
			out = append(out, f)
		}
	}
	return out
}

func patternError(pattern string, err error) error {
	msg := err.Error()
	// The regexp error quotes our (?m) prefix; it confuses the reader.
	msg = strings.ReplaceAll(msg, "(?mi)", "")
	msg = strings.ReplaceAll(msg, "(?m)", "")
	msg = strings.TrimPrefix(msg, search.ErrSyntax.Error()+": ")
	hint := "Patterns use RE2 syntax (Go regexp): lookahead/lookbehind ((?=…), (?!…), (?<=…)) and backreferences (\\1) are not supported; escape ( ) [ ] { } . * + ? | \\ with a backslash to match them literally"
	return fmt.Errorf("%w: %s. %s, or set literal=true to search for %q as plain text", search.ErrSyntax, msg, hint, pattern)
}

// Summarize implements Summarizer: the header's first line, e.g.
// "12 matches in 3 files (showing 10)", or "no matches".
func (s *SearchCode) Summarize(output string) string {
	first, _, _ := strings.Cut(output, "\n")
	if strings.HasPrefix(first, "No matches") {
		first = "no matches"
	}
	if strings.Contains(output, "\nPartial results: the search timed out") {
		first += ", timed out"
	}
	return first
}
