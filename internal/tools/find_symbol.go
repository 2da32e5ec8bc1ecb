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

// FindSymbolName is the name the model calls find_symbol by.
const FindSymbolName = "find_symbol"

//go:embed desc/find_symbol.md
var findSymbolDescription string

const (
	// findSymbolShown is the most definitions one call shows: a name
	// defined more often than that is too common to be what was meant,
	// and kind or path narrows it.
	findSymbolShown = 10
	// maxSuggestions is how many close names are offered when nothing
	// matches.
	maxSuggestions = 5
)

type findSymbolArgs struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Path string `json:"path"`
}

var findSymbolSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "identifier to find the definition of, e.g. \"NewServer\", or \"Type.Method\" such as \"Client.Do\""},
    "kind": {"type": "string", "description": "only definitions of this kind: func, method, type, struct, interface, const, var, class … (default: any)"},
    "path": {"type": "string", "description": "only definitions in this directory or file, relative to the repository root (default: the whole repository)"}
  },
  "required": ["name"]
}`)

// FindSymbol is the find_symbol tool: where a name is defined, ranked, with
// its signature and first doc line. It is safe for concurrent use.
type FindSymbol struct {
	ws   *Workspace
	opts Options
}

// NewFindSymbol returns the find_symbol tool over ws, answering from
// opts.Index when it gives an index and from a scan (opts.Search) when not.
func NewFindSymbol(ws *Workspace, opts Options) *FindSymbol {
	return &FindSymbol{ws: ws, opts: opts}
}

// Definition implements Tool.
func (f *FindSymbol) Definition() Definition {
	return Definition{Name: FindSymbolName, Description: strings.TrimSpace(findSymbolDescription), Parameters: findSymbolSchema}
}

// Describe implements Describer: "Client.Do (method) in internal/".
func (f *FindSymbol) Describe(input json.RawMessage) string { return describeSymbol(input) }

// describeSymbol is the short form of a call about one name: "name
// (kind) in path", the kind and path when given, then the other
// arguments.
func describeSymbol(input json.RawMessage) string {
	a, _ := parseArgsForm(input)
	var b strings.Builder
	b.WriteString(a.str("name"))
	if k := a.str("kind"); k != "" {
		b.WriteString(" (" + k + ")")
	}
	if p := a.str("path"); p != "" {
		b.WriteString(" in " + p)
	}
	return a.rest(&b)
}

// Run implements Tool.
func (f *FindSymbol) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[findSymbolArgs](input)
	if err != nil {
		return Output{}, err
	}
	name, err := checkSymbolName(args.Name)
	if err != nil {
		return Output{}, err
	}
	scope, err := scopeRel(f.ws, args.Path)
	if err != nil {
		return Output{}, err
	}
	idx, note := codeIndex(f.opts.Index)
	keep := func(d symbols.Symbol) bool { return inScope(scope, d.Path) && kindMatches(d.Kind, args.Kind) }
	var defs []symbols.Symbol
	folded := false
	var suggest []string
	if idx != nil {
		defs = slices.DeleteFunc(idx.Definitions(name, false), func(d symbols.Symbol) bool { return !keep(d) })
		if len(defs) == 0 {
			defs = slices.DeleteFunc(idx.Definitions(name, true), func(d symbols.Symbol) bool { return !keep(d) })
			folded = true
		}
		if len(defs) == 0 {
			_, base := splitQualified(name)
			suggest = closeNames(ctx, base, idx.SymbolNames(), maxSuggestions)
		}
	} else {
		defs, folded, note = f.scan(ctx, name, scope, keep, note)
	}
	defs = preferKind(defs, args.Kind)
	rankSymbols(defs, name)
	text, refs := renderSymbols(name, args, defs, folded, suggest, OutputBudget(ctx)-searchNoteRoom)
	var b strings.Builder
	b.WriteString(text)
	writeNote(&b, note)
	return Output{Text: b.String(), Refs: refs}, nil
}

// scan finds the definitions of name without an index: the files naming
// it, then their definitions; case-insensitively when there is no exact
// one.
func (f *FindSymbol) scan(ctx context.Context, name, scope string, keep func(symbols.Symbol) bool, note string) (defs []symbols.Symbol, folded bool, _ string) {
	_, base := splitQualified(name)
	complete := true
	for _, fold := range []bool{false, true} {
		files, done, err := scanWord(ctx, f.ws, f.opts, scope, base, fold)
		if err != nil {
			return nil, fold, note + scanStopped(err)
		}
		all, _, read, noCtags := scanSymbols(ctx, f.ws, f.searchMaxSize(), files, "")
		complete = complete && done && read
		if noCtags && !strings.Contains(note, noCtagsNote) {
			note += noCtagsNote
		}
		defs = slices.DeleteFunc(all, func(d symbols.Symbol) bool { return !keep(d) || !matchesDef(d, name, fold) })
		if len(defs) > 0 {
			folded = fold
			break
		}
	}
	if !complete {
		note += scanStopped(ctx.Err())
	}
	return defs, folded, note
}

func (f *FindSymbol) searchMaxSize() int64 { return NewSearchCode(f.ws, f.opts).opts.MaxFileSize }

// kindGroups are the kinds taken for one another: a model asking for a
// "function" means Go's func as much as ctags' function.
var kindGroups = [][]string{
	{"func", "function", "method", "member"},
	{"type", "struct", "interface", "class", "typedef", "enum", "trait"},
	{"var", "variable", "field", "property"},
	{"const", "constant", "enumerator", "macro"},
}

// kindMatches reports whether a definition of kind is what want asks for.
func kindMatches(kind, want string) bool {
	want = strings.ToLower(strings.TrimSpace(want))
	kind = strings.ToLower(kind)
	if want == "" || want == kind {
		return true
	}
	for _, g := range kindGroups {
		if slices.Contains(g, want) {
			// "method" asked for finds methods only; "func" finds both.
			if want == "method" {
				return kind == "method" || kind == "member"
			}
			return slices.Contains(g, kind)
		}
	}
	return false
}

// preferKind keeps the definitions of exactly the kind asked for, when
// there are any, over those of a kind taken for it: "class" finds a
// Python class rather than a Go struct when both are there.
func preferKind(defs []symbols.Symbol, kind string) []symbols.Symbol {
	exact := func(d symbols.Symbol) bool { return strings.EqualFold(d.Kind, strings.TrimSpace(kind)) }
	if kind == "" || !slices.ContainsFunc(defs, exact) {
		return defs
	}
	return slices.DeleteFunc(defs, func(d symbols.Symbol) bool { return !exact(d) })
}

// rankSymbols orders definitions as the model most likely means them: the
// exact spelling first, then code over tests, hand-written over generated,
// exported over not, a definition that stands on its own over a member
// that shares its name (a field, an interface's method, an assembly label
// or C macro), and shallower paths first.
func rankSymbols(defs []symbols.Symbol, name string) {
	score := func(d symbols.Symbol) int {
		s := 0
		if isMember(d) {
			s++
		}
		if !matchesDef(d, name, false) {
			s += 16
		}
		if d.Test {
			s += 8
		}
		if d.Generated {
			s += 4
		}
		if !d.Exported {
			s += 2
		}
		return s
	}
	slices.SortStableFunc(defs, func(a, b symbols.Symbol) int {
		return cmp.Or(
			cmp.Compare(score(a), score(b)),
			cmp.Compare(pathDepth(a.Path), pathDepth(b.Path)),
			strings.Compare(a.Path, b.Path),
			cmp.Compare(a.Line, b.Line),
		)
	})
}

// isMember reports whether d is a name inside another definition, or a
// label, rather than code that stands on its own: asked for "Addr.String"
// or "Retry", a model means the method with a body or the function more
// often than the interface's method or the struct field of that name.
func isMember(d symbols.Symbol) bool {
	switch d.Kind {
	case "field", "member", "label", "macro":
		return true
	case "method":
		// Go's reader writes a method with a body as "func (r T) …";
		// an interface's method has no receiver.
		return d.Lang == "go" && !strings.HasPrefix(d.Signature, "func ")
	}
	return false
}

// renderSymbols writes the definitions found, at most findSymbolShown of
// them and room bytes, or what to try when there are none.
func renderSymbols(name string, args findSymbolArgs, defs []symbols.Symbol, folded bool, suggest []string, room int) (string, []Ref) {
	var b strings.Builder
	if len(defs) == 0 {
		fmt.Fprintf(&b, "No definition named %q", name)
		if args.Kind != "" {
			fmt.Fprintf(&b, " of kind %q", args.Kind)
		}
		if args.Path != "" {
			fmt.Fprintf(&b, " under %s", args.Path)
		}
		b.WriteString(".\n")
		if len(suggest) > 0 {
			b.WriteString("Close names: " + strings.Join(suggest, ", ") + ".\n")
		}
		b.WriteString("Try another spelling, no kind or path, or search_code for the text.\n")
		return b.String(), nil
	}
	var body strings.Builder
	var refs []Ref
	for _, d := range defs {
		if len(refs) == findSymbolShown {
			break
		}
		line := formatSymbol(d)
		if body.Len()+len(line) > room && len(refs) > 0 {
			break
		}
		body.WriteString(line)
		refs = append(refs, Ref{Path: d.Path, Start: d.Line, End: max(d.Line, d.EndLine)})
	}
	if folded {
		fmt.Fprintf(&b, "No definition spelled exactly %q; these differ in case.\n", name)
	}
	b.WriteString(countNoun(len(defs), "definition", "definitions"))
	if len(refs) < len(defs) {
		fmt.Fprintf(&b, ", showing %d; narrow with kind or path", len(refs))
	}
	b.WriteString("\n\n")
	b.WriteString(body.String())
	return b.String(), refs
}

// formatSymbol is one definition: "path:line  kind  signature", and its
// first doc line indented under it.
func formatSymbol(d symbols.Symbol) string {
	sig := d.Signature
	if sig == "" {
		sig = d.Name
	}
	s := fmt.Sprintf("%s:%d  %s  %s\n", d.Path, d.Line, d.Kind, clipArgs(oneLineArgs(sig), 300))
	if doc := oneLineArgs(d.Doc); doc != "" {
		s += "    " + clipArgs(doc, 200) + "\n"
	}
	return s
}

// closeNames returns up to n of names that want may have meant: the same
// name in another case, names it is a prefix of, then names a typo or two
// away, closest first. It gives up (with what it has) when ctx ends.
func closeNames(ctx context.Context, want string, names []string, n int) []string {
	type cand struct {
		name  string
		score int
	}
	lw := strings.ToLower(want)
	maxDist := max(1, len(lw)/3)
	var cands []cand
	for i, name := range names {
		if i%1024 == 0 && ctx.Err() != nil {
			break
		}
		ln := strings.ToLower(name)
		switch {
		case ln == lw:
			cands = append(cands, cand{name, 0})
		case len(lw) >= 3 && strings.HasPrefix(ln, lw):
			cands = append(cands, cand{name, 1 + min(len(ln)-len(lw), 20)})
		case absInt(len(ln)-len(lw)) <= maxDist:
			if d := editDistance(ln, lw, maxDist); d <= maxDist {
				cands = append(cands, cand{name, 21 + d})
			}
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.name, b.name))
	})
	var out []string
	for _, c := range cands {
		if len(out) == n {
			break
		}
		if !slices.Contains(out, c.name) {
			out = append(out, c.name)
		}
	}
	return out
}

// Summarize implements Summarizer: "3 definitions", "no definition".
func (f *FindSymbol) Summarize(output string) string {
	first, _, _ := strings.Cut(output, "\n")
	switch {
	case strings.HasPrefix(first, "No definition named"):
		return "no definition"
	case strings.HasPrefix(first, "No definition spelled exactly"):
		second, _, _ := strings.Cut(strings.SplitN(output, "\n", 3)[1], ",")
		return second + ", case differs"
	}
	first, _, _ = strings.Cut(first, ";")
	return first
}
