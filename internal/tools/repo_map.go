package tools

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/askrepo/askrepo/internal/symbols"
)

// RepoMapName is the name the model calls repo_map by.
const RepoMapName = "repo_map"

//go:embed desc/repo_map.md
var repoMapDescription string

const (
	// defaultMapTokens is the outline's default size: enough for the
	// thirty or so files that carry a project, little enough to call it
	// on every new repository.
	defaultMapTokens = 1500
	minMapTokens     = 200
	maxMapTokens     = 8000
	// bytesPerToken estimates tokens from bytes, as code tokenizes.
	bytesPerToken = 4
	// mapSymbolsPerFile is the most definitions listed under one file.
	mapSymbolsPerFile = 8
	// mapScanFiles bounds how many files a map without an index reads.
	mapScanFiles = 400
)

type repoMapArgs struct {
	Path      string `json:"path"`
	MaxTokens int    `json:"max_tokens"`
}

var repoMapSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "directory to outline, relative to the repository root (default: the whole repository)"},
    "max_tokens": {"type": "integer", "minimum": 200, "maximum": 8000, "description": "about how many tokens the outline may take (default 1500)"}
  }
}`)

// RepoMap is the repo_map tool: the most referenced files of the
// repository or a directory, with their main definitions, within a token
// budget. It is safe for concurrent use.
type RepoMap struct {
	ws   *Workspace
	opts Options
}

// NewRepoMap returns the repo_map tool over ws, ranking files by the
// references opts.Index counts, or by depth from a scan without one.
func NewRepoMap(ws *Workspace, opts Options) *RepoMap { return &RepoMap{ws: ws, opts: opts} }

// Definition implements Tool.
func (r *RepoMap) Definition() Definition {
	return Definition{Name: RepoMapName, Description: strings.TrimSpace(repoMapDescription), Parameters: repoMapSchema}
}

// Describe implements Describer: "internal/ max_tokens=3000", "." for the
// whole repository.
func (r *RepoMap) Describe(input json.RawMessage) string {
	a, _ := parseArgsForm(input)
	var b strings.Builder
	b.WriteString(cmp.Or(a.str("path"), "."))
	return a.rest(&b)
}

// Run implements Tool.
func (r *RepoMap) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[repoMapArgs](input)
	if err != nil {
		return Output{}, err
	}
	if args.MaxTokens < 0 {
		return Output{}, fmt.Errorf(`"max_tokens" must be between %d and %d, not %d; leave it out for %d`, minMapTokens, maxMapTokens, args.MaxTokens, defaultMapTokens)
	}
	scope, err := scopeRel(r.ws, args.Path)
	if err != nil {
		return Output{}, err
	}
	tokens := cmp.Or(args.MaxTokens, defaultMapTokens)
	tokens = min(max(tokens, minMapTokens), maxMapTokens)
	room := min(tokens*bytesPerToken, OutputBudget(ctx)-searchNoteRoom)
	m := mapWriter{room: room}
	idx, note := codeIndex(r.opts.Index)
	if idx != nil {
		for _, fs := range idx.Files() {
			if inScope(scope, fs.Path) && mapWorthy(fs.Path, fs.Symbols) {
				m.add(fs.Path, fs.Refs, fs.Symbols)
			}
		}
	} else {
		note = r.scan(ctx, scope, &m, note)
	}
	if len(m.refs) == 0 && scope != "." && !r.hasFiles(ctx, scope) {
		return Output{}, fmt.Errorf("path %q holds no files to map; use list_files to find the directory, or leave path out to map the whole repository", args.Path)
	}
	var b strings.Builder
	m.write(&b, scope, idx != nil, tokens)
	writeNote(&b, note)
	return Output{Text: b.String(), Refs: m.refs}, nil
}

// hasFiles reports whether scope is a file or directory of the checkout
// that lists files.
func (r *RepoMap) hasFiles(ctx context.Context, scope string) bool {
	all, err := r.ws.Files(ctx)
	return err == nil && slices.ContainsFunc(all, func(f string) bool { return inScope(scope, f) })
}

// scan maps the Go files under scope without an index: shallower files
// first (their packages are what the rest builds on), read through the
// wall until the map is full, the call's time is up or mapScanFiles are
// read.
func (r *RepoMap) scan(ctx context.Context, scope string, m *mapWriter, note string) string {
	all, err := r.ws.Files(ctx)
	if err != nil {
		return note + scanStopped(err)
	}
	var files []string
	for _, f := range all {
		if inScope(scope, f) && strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	slices.SortStableFunc(files, func(a, b string) int { return cmp.Compare(pathDepth(a), pathDepth(b)) })
	maxSize := NewSearchCode(r.ws, r.opts).opts.MaxFileSize
	read := 0
	for _, f := range files {
		if m.full || ctx.Err() != nil || read == mapScanFiles {
			m.total += len(files) - read
			break
		}
		read++
		defs, _, _, _ := scanSymbols(ctx, r.ws, maxSize, []string{f}, "")
		if mapWorthy(f, defs) {
			m.add(f, -1, defs)
		}
	}
	return note + " Only Go files are mapped, shallowest first."
}

// mapWorthy reports whether a file belongs on the map: it defines
// something, and it is not a test or generated.
func mapWorthy(p string, defs []symbols.Symbol) bool {
	if len(defs) == 0 || strings.HasSuffix(p, "_test.go") {
		return false
	}
	return !defs[0].Test && !defs[0].Generated
}

// mapWriter lays files out within room bytes.
type mapWriter struct {
	room  int
	body  strings.Builder
	refs  []Ref
	total int // files worth mapping, shown or not
	full  bool
}

// add lays out one file, refs references into it (-1 when unknown), and
// its main definitions, if they fit.
func (m *mapWriter) add(p string, refs int, defs []symbols.Symbol) {
	m.total++
	if m.full {
		return
	}
	var b strings.Builder
	b.WriteString(p)
	if refs >= 0 {
		fmt.Fprintf(&b, " (%s)", countNoun(refs, "ref", "refs"))
	}
	b.WriteByte('\n')
	for _, d := range mainSymbols(defs) {
		sig := cmp.Or(d.Signature, d.Kind+" "+d.Name)
		b.WriteString("  " + clipArgs(oneLineArgs(sig), 160) + "\n")
	}
	if m.body.Len()+b.Len() > m.room {
		// A file that does not fit ends the map: later ones are ranked
		// lower, and a map with holes reads as complete.
		m.full = true
		return
	}
	m.body.WriteString(b.String())
	m.refs = append(m.refs, Ref{Path: p})
}

// mainSymbols picks a file's definitions worth showing, at most
// mapSymbolsPerFile, in line order: exported ones when it has any, never
// fields; types first, then functions, then methods, then the rest
// (variables, constants, an interface's methods), so a file of many
// constants still shows its types.
func mainSymbols(defs []symbols.Symbol) []symbols.Symbol {
	exported := slices.ContainsFunc(defs, func(d symbols.Symbol) bool { return d.Exported })
	var tiers [4][]int
	for i, d := range defs {
		if d.Kind == "field" || d.Kind == "member" || exported && !d.Exported {
			continue
		}
		tiers[mapTier(d)] = append(tiers[mapTier(d)], i)
	}
	var pick []int
	for _, t := range tiers {
		pick = append(pick, t[:min(len(t), mapSymbolsPerFile-len(pick))]...)
	}
	slices.Sort(pick)
	out := make([]symbols.Symbol, len(pick))
	for i, k := range pick {
		out[i] = defs[k]
	}
	return out
}

// mapTier ranks a definition for the map: 0 a type, 1 a function, 2 a
// method, 3 anything else.
func mapTier(d symbols.Symbol) int {
	switch {
	case kindMatches(d.Kind, "type"):
		return 0
	case d.Container == "" && kindMatches(d.Kind, "function"):
		return 1
	case kindMatches(d.Kind, "method") && (d.Lang != "go" || strings.HasPrefix(d.Signature, "func ")):
		return 2
	}
	return 3
}

// write writes the header, the files laid out and what to do for more.
func (m *mapWriter) write(b *strings.Builder, scope string, ranked bool, tokens int) {
	where := "the repository"
	if scope != "." {
		where = scope
	}
	if len(m.refs) == 0 {
		fmt.Fprintf(b, "No definitions to map in %s. Use list_files to see what it holds.\n", where)
		return
	}
	order := "most referenced first"
	if !ranked {
		order = "shallowest first"
	}
	fmt.Fprintf(b, "Map of %s: %d of %s, %s (about %d tokens).\n\n",
		where, len(m.refs), countNoun(m.total, "file", "files"), order, (m.body.Len()+bytesPerToken-1)/bytesPerToken)
	b.WriteString(m.body.String())
	if len(m.refs) < m.total {
		fmt.Fprintf(b, "\n%d more files not shown. Map a directory with path", m.total-len(m.refs))
		if tokens < maxMapTokens {
			fmt.Fprintf(b, ", or raise max_tokens (up to %d)", maxMapTokens)
		}
		b.WriteString(".\n")
	}
}

// Summarize implements Summarizer: "14 of 230 files".
func (r *RepoMap) Summarize(output string) string {
	first, _, _ := strings.Cut(output, "\n")
	if strings.HasPrefix(first, "No definitions") {
		return "nothing to map"
	}
	_, rest, _ := strings.Cut(first, ": ")
	rest, _, _ = strings.Cut(rest, ",")
	return rest
}
