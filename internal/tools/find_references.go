package tools

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/askrepo/askrepo/internal/symbols"
)

// FindReferencesName is the name the model calls find_references by.
const FindReferencesName = "find_references"

//go:embed desc/find_references.md
var findReferencesDescription string

const (
	// refsShown is the most lines one call shows, refsPerFile the most of
	// one file: the callers across the repository matter more than every
	// use inside one file.
	refsShown   = 60
	refsPerFile = 8
)

type findReferencesArgs struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

var findReferencesSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "identifier whose uses to find, e.g. \"NewServer\"; for \"Client.Do\" the uses of Do are found"},
    "path": {"type": "string", "description": "only uses in this directory or file, relative to the repository root (default: the whole repository)"}
  },
  "required": ["name"]
}`)

// FindReferences is the find_references tool: where an identifier is used,
// grouped by file, its definition first. It is safe for concurrent use.
type FindReferences struct {
	ws   *Workspace
	opts Options
}

// NewFindReferences returns the find_references tool over ws, answering
// from opts.Index when it gives an index and from a scan when not.
func NewFindReferences(ws *Workspace, opts Options) *FindReferences {
	return &FindReferences{ws: ws, opts: opts}
}

// Definition implements Tool.
func (f *FindReferences) Definition() Definition {
	return Definition{Name: FindReferencesName, Description: strings.TrimSpace(findReferencesDescription), Parameters: findReferencesSchema}
}

// Describe implements Describer: "NewServer in internal/".
func (f *FindReferences) Describe(input json.RawMessage) string { return describeSymbol(input) }

// Run implements Tool.
func (f *FindReferences) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[findReferencesArgs](input)
	if err != nil {
		return Output{}, err
	}
	name, err := checkSymbolName(args.Name)
	if err != nil {
		return Output{}, err
	}
	_, base := splitQualified(name)
	scope, err := scopeRel(f.ws, args.Path)
	if err != nil {
		return Output{}, err
	}
	idx, note := codeIndex(f.opts.Index)
	var occs []symbols.Occurrence
	if idx != nil {
		occs = markDefinitions(idx.References(base), idx.Definitions(base, false), base)
	} else {
		occs, note = f.scan(ctx, base, scope, note)
	}
	occs = slices.DeleteFunc(occs, func(o symbols.Occurrence) bool { return !inScope(scope, o.Path) })
	text, refs := renderReferences(base, args.Path, occs, OutputBudget(ctx)-searchNoteRoom)
	var b strings.Builder
	b.WriteString(text)
	writeNote(&b, note)
	return Output{Text: b.String(), Refs: refs}, nil
}

// scan finds the files naming base as a word, and reads its occurrences
// in them: in Go files its identifiers, in others its words.
func (f *FindReferences) scan(ctx context.Context, base, scope, note string) ([]symbols.Occurrence, string) {
	files, done, err := scanWord(ctx, f.ws, f.opts, scope, base, false)
	if err != nil {
		return nil, note + scanStopped(err)
	}
	defs, occs, read, noCtags := scanSymbols(ctx, f.ws, NewSearchCode(f.ws, f.opts).opts.MaxFileSize, files, base)
	occs = markDefinitions(occs, defs, base)
	if noCtags {
		note += noCtagsNote
	}
	if !done || !read {
		note += scanStopped(ctx.Err())
	}
	return occs, note
}

// markDefinitions marks as definitions the occurrences on the first line
// of a symbol of defs named name, and no others: a parameter or a local
// variable of the same name declares it too, but is not what "the
// definition first" means.
func markDefinitions(occs []symbols.Occurrence, defs []symbols.Symbol, name string) []symbols.Occurrence {
	type at struct {
		path string
		line int
	}
	isDef := make(map[at]bool, len(defs))
	for _, d := range defs {
		if d.Name == name {
			isDef[at{d.Path, d.Line}] = true
		}
	}
	for i, o := range occs {
		occs[i].Def = isDef[at{o.Path, o.Line}]
	}
	return occs
}

// refFile is one file's occurrences, as shown.
type refFile struct {
	path string
	occs []symbols.Occurrence
	def  bool
}

// groupReferences groups occs by file: files defining the name first,
// then those in a directory that defines it (the same package), then the
// rest, each in path order, lines in order.
func groupReferences(occs []symbols.Occurrence) []refFile {
	byPath := map[string]*refFile{}
	var files []*refFile
	defDirs := map[string]bool{}
	for _, o := range occs {
		rf := byPath[o.Path]
		if rf == nil {
			rf = &refFile{path: o.Path}
			byPath[o.Path] = rf
			files = append(files, rf)
		}
		rf.occs = append(rf.occs, o)
		if o.Def {
			rf.def = true
			defDirs[path.Dir(o.Path)] = true
		}
	}
	rank := func(rf *refFile) int {
		switch {
		case rf.def:
			return 0
		case defDirs[path.Dir(rf.path)]:
			return 1
		}
		return 2
	}
	slices.SortFunc(files, func(a, b *refFile) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.path, b.path))
	})
	out := make([]refFile, len(files))
	for i, rf := range files {
		slices.SortFunc(rf.occs, func(a, b symbols.Occurrence) int { return cmp.Compare(a.Line, b.Line) })
		// The definition's line leads its file.
		slices.SortStableFunc(rf.occs, func(a, b symbols.Occurrence) int {
			return cmp.Compare(boolRank(!a.Def), boolRank(!b.Def))
		})
		out[i] = *rf
	}
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// renderReferences writes the grouped occurrences within refsShown lines,
// refsPerFile a file and room bytes.
func renderReferences(name, where string, occs []symbols.Occurrence, room int) (string, []Ref) {
	if len(occs) == 0 {
		msg := fmt.Sprintf("No uses of %q", name)
		if where != "" {
			msg += " under " + where
		}
		return msg + ".\nCheck the spelling with find_symbol, or use search_code for text that is not an identifier.\n", nil
	}
	files := groupReferences(occs)
	var body strings.Builder
	var refs []Ref
	shown, filesShown := 0, 0
	full := false
	for _, rf := range files {
		if full {
			break
		}
		head := rf.path + "\n"
		if body.Len()+len(head) > room || shown == refsShown {
			break
		}
		body.WriteString(head)
		filesShown++
		n := 0
		for _, o := range rf.occs {
			if n == refsPerFile || shown == refsShown {
				break
			}
			line := "  " + strconv.Itoa(o.Line)
			if o.Def {
				line += " [def]"
			}
			line += ": " + clipArgs(oneLineArgs(o.Text), 200) + "\n"
			if body.Len()+len(line) > room {
				full = true
				break
			}
			if n == 0 {
				refs = append(refs, Ref{Path: rf.path, Start: o.Line, End: o.Line})
			}
			body.WriteString(line)
			n++
			shown++
		}
		if more := len(rf.occs) - n; more > 0 {
			fmt.Fprintf(&body, "  … %d more in this file\n", more)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s to %q in %s", countNoun(len(occs), "reference", "references"), name, countNoun(len(files), "file", "files"))
	if shown < len(occs) {
		fmt.Fprintf(&b, " (showing %d in %s; narrow with path)", shown, countNoun(filesShown, "file", "files"))
	}
	b.WriteString("\n\n")
	b.WriteString(body.String())
	return b.String(), refs
}

// Summarize implements Summarizer: "12 references in 4 files", "no uses".
func (f *FindReferences) Summarize(output string) string {
	first, _, _ := strings.Cut(output, "\n")
	if strings.HasPrefix(first, "No uses") {
		return "no uses"
	}
	count, rest, _ := strings.Cut(first, " to ")
	_, files, _ := strings.Cut(rest, "\" in ")
	files, _, _ = strings.Cut(files, " (")
	return count + " in " + files
}
