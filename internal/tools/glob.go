package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// GlobName is the name the model calls glob by.
const GlobName = "glob"

//go:embed desc/glob.md
var globDescription string

// maxGlobResults caps one answer: past a hundred names the pattern is too
// broad to be useful.
const maxGlobResults = 100

// globNoteRoom is kept out of the output budget for the note on what was
// not shown.
const globNoteRoom = 128

type globArgs struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// Glob is the glob tool: the listable files whose paths match a pattern.
// It is safe for concurrent use.
type Glob struct{ ws *Workspace }

// NewGlob returns the glob tool over ws; it has no options.
func NewGlob(ws *Workspace, _ Options) *Glob { return &Glob{ws: ws} }

// Describe implements Describer: "\"**/*_test.go\" in internal".
func (g *Glob) Describe(input json.RawMessage) string {
	f, _ := parseArgsForm(input)
	var b strings.Builder
	patternIn(&b, f.str("pattern"), f.str("path"))
	return f.rest(&b)
}

func (g *Glob) Definition() Definition {
	return Definition{
		Name:        GlobName,
		Description: strings.TrimSpace(globDescription),
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Glob pattern, e.g. \"**/*.go\", \"cmd/*/main.go\", \"*config*\"."},` +
			`"path":{"type":"string","description":"Directory to search in, relative to the repository root. Default \".\"."}},` +
			`"required":["pattern"]}`),
	}
}

func (g *Glob) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[globArgs](input)
	if err != nil {
		return Output{}, err
	}
	pattern, err := g.pattern(args.Pattern)
	if err != nil {
		return Output{}, err
	}
	dir := strings.TrimSpace(args.Path)
	if dir == "" {
		dir = "."
	}
	rel, err := g.ws.Rel(dir)
	if err != nil {
		return Output{}, err
	}
	files, err := g.ws.Files(ctx)
	if err != nil {
		return Output{}, err
	}
	prefix := ""
	if rel != "." {
		prefix = rel + "/"
	}
	// Like .gitignore, a pattern without a slash names a file at any depth:
	// "*.go" finds every Go file, which is what a model asking it means.
	byName := !strings.Contains(pattern, "/")
	var matches []string
	for i := sort.SearchStrings(files, prefix); i < len(files) && strings.HasPrefix(files[i], prefix); i++ {
		if i%64 == 0 && ctx.Err() != nil {
			return Output{}, fmt.Errorf("glob: %w", ctx.Err())
		}
		name := files[i][len(prefix):]
		if byName {
			name = path.Base(name)
		}
		if doublestar.MatchUnvalidated(pattern, name) {
			matches = append(matches, files[i])
		}
	}
	// The names listed are not read, so the call reports no Refs.
	return Text(renderGlob(pattern, rel, matches, OutputBudget(ctx)-globNoteRoom)), nil
}

// pattern checks the model's pattern and makes it relative to the root.
func (g *Glob) pattern(asked string) (string, error) {
	pattern := strings.TrimSpace(asked)
	if pattern == "" {
		return "", errors.New(`"pattern" is required: a file name pattern such as "**/*_test.go" or "Dockerfile*"`)
	}
	if strings.HasPrefix(pattern, "/") {
		// A model often writes the checkout's absolute path, or "/x" meaning
		// the root; both mean "from the root".
		if rel, err := g.ws.Rel(pattern); err == nil {
			pattern = rel
		} else {
			pattern = strings.TrimLeft(pattern, "/")
		}
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if !doublestar.ValidatePattern(pattern) {
		return "", fmt.Errorf("pattern %q is not a valid glob (check that brackets and braces are closed); examples: \"**/*.go\", \"src/**/test_*.py\"", asked)
	}
	if err := checkGlobCost("pattern", pattern); err != nil {
		return "", err
	}
	return pattern, nil
}

// renderGlob lists the matches under rel that fit budget bytes, and says
// how many it left out.
func renderGlob(pattern, rel string, matches []string, budget int) string {
	where := ""
	if rel != "." {
		where = " under " + rel + "/"
	}
	var b strings.Builder
	if len(matches) == 0 {
		fmt.Fprintf(&b, "no files match %q%s. A pattern without \"/\" matches file names at any depth and \"**\" crosses directories; ignored and secret files are never listed. Use list_files to see the layout.\n", pattern, where)
		return b.String()
	}
	fmt.Fprintf(&b, "%d %s match %q%s\n", len(matches), nounFor(len(matches), "file", "files"), pattern, where)
	shown := matches[:min(len(matches), maxGlobResults)]
	for i, m := range shown {
		if b.Len()+len(m)+1 > budget && i > 0 {
			shown = shown[:i]
			break
		}
		b.WriteString(m)
		b.WriteByte('\n')
	}
	if len(matches) > len(shown) {
		fmt.Fprintf(&b, "… %d of %d shown; make the pattern more specific or give a path\n", len(shown), len(matches))
	}
	return b.String()
}

// Summarize gives "12 files" or "no match".
func (g *Glob) Summarize(output string) string {
	if strings.HasPrefix(output, "no files match") {
		return "no match"
	}
	first, _, _ := strings.Cut(output, " match ")
	return first
}

// Limits on a glob from the model. doublestar matches "{a,b}" by trying
// each alternative with the rest of the pattern, so n groups of braces cost
// the product of their sizes for every name ("{,}" thirty times is a
// billion tries per file); stars backtrack one level only, costing at most
// the pattern's length times the name's.
const (
	maxGlobLen          = 256
	maxGlobAlternatives = 64
)

// checkGlobCost refuses a glob that could take seconds per file name.
func checkGlobCost(arg, glob string) error {
	if len(glob) > maxGlobLen {
		return fmt.Errorf("%q is %d characters long, more than %d; give a shorter glob such as \"**/*.go\"", arg, len(glob), maxGlobLen)
	}
	if n := globAlternatives(glob); n > maxGlobAlternatives {
		return fmt.Errorf("%q %q is too complex: its braces expand to %s patterns, the limit is %d; use fewer {a,b} groups, or make several calls", arg, glob, countOrMore(n), maxGlobAlternatives)
	}
	return nil
}

// globAlternatives returns how many patterns the braces of glob expand to,
// saturating at 1<<20.
func globAlternatives(glob string) int {
	n, _ := braceSeq(glob, 0, 0)
	return n
}

const braceCap = 1 << 20

// braceSeq reads glob from i to the end of a sequence (the end of glob,
// or a ',' or '}' inside braces) and returns the product of the sizes of
// its brace groups and where it stopped.
func braceSeq(glob string, i, depth int) (int, int) {
	prod := 1
	for i < len(glob) {
		switch glob[i] {
		case '\\':
			i += 2
			continue
		case '{':
			sum := 0
			i++
			for {
				n, j := braceSeq(glob, i, depth+1)
				sum = min(sum+n, braceCap)
				i = j + 1
				if j >= len(glob) || glob[j] == '}' {
					break
				}
			}
			prod = min(prod*max(sum, 1), braceCap)
			continue
		case ',', '}':
			if depth > 0 {
				return prod, i
			}
		}
		i++
	}
	return prod, i
}

func countOrMore(n int) string {
	if n >= braceCap {
		return fmt.Sprintf("%d or more", braceCap)
	}
	return fmt.Sprint(n)
}
