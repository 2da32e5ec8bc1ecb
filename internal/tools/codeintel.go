package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/askrepo/askrepo/internal/ctxio"
	"github.com/askrepo/askrepo/internal/search"
	"github.com/askrepo/askrepo/internal/symbols"
)

// The symbol tools (find_symbol, find_references, repo_map) answer from the
// code index of the checkout's commit when Options.Index gives one. Until
// it does (the index is still being built, or failed), they answer from a
// scan: search_code's engine finds the files that name the symbol, through
// the same wall, and package symbols reads those files' definitions. A scan
// is bounded by the call's deadline and by scanMaxFiles, and says so.

const (
	// scanMaxFiles is the most files a scan reads definitions from; a
	// name in more files than that is common enough that the first ones,
	// in path order, show the pattern.
	scanMaxFiles = 200
	// maxSymbolName is the longest name the symbol tools accept: no
	// identifier is longer, and the edit distances of suggestions cost the
	// product of two lengths.
	maxSymbolName = 200
)

// codeIndex returns the index of the checkout when src gives one, else nil
// and the note the result carries ("… answered from a scan").
func codeIndex(src IndexSource) (CodeIndex, string) {
	const scanNote = "No code index is ready for this commit; these results come from a scan of the files, which may miss some."
	if src == nil {
		return nil, scanNote
	}
	idx, note := src()
	if idx == nil {
		if note == "" {
			note = scanNote
		}
		return nil, note
	}
	return idx, idx.Note()
}

// checkSymbolName refuses a name that cannot be an identifier: empty, too
// long, or holding white space or control characters (a name from the
// model may hold anything; it is matched as text, never as a pattern).
func checkSymbolName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errors.New(`"name" is required: the identifier to look up, e.g. "NewServer" or "Client.Do"`)
	case len(name) > maxSymbolName:
		return "", fmt.Errorf(`"name" is %d bytes long; give one identifier (at most %d bytes), e.g. "NewServer" or "Client.Do"`, len(name), maxSymbolName)
	case strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return "", fmt.Errorf(`"name" %q holds white space; give one identifier, e.g. "NewServer" or "Client.Do", and use search_code for phrases`, oneLineArgs(name))
	}
	return normalizeName(name), nil
}

// normalizeName takes the forms models write a Go name in to the one the
// index keys: "NewServer()" is NewServer, "(*Client).Do" and
// "(Client).Do" are Client.Do.
func normalizeName(name string) string {
	name = strings.TrimSuffix(name, "()")
	if rest, ok := strings.CutPrefix(name, "("); ok {
		if recv, method, ok := strings.Cut(rest, ")."); ok && method != "" {
			name = strings.TrimLeft(recv, "*") + "." + method
		}
	}
	return name
}

// splitQualified splits "Client.Do" into "Client" and "Do"; a name without
// a dot has no container.
func splitQualified(name string) (container, base string) {
	if i := strings.LastIndexByte(name, '.'); i > 0 && i < len(name)-1 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// scopeRel checks the path argument of a symbol tool: "" or "." is the
// whole checkout; anything else is relative, inside the wall.
func scopeRel(ws *Workspace, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return ".", nil
	}
	return ws.Rel(p)
}

// inScope reports whether file rel is scope or under it.
func inScope(scope, rel string) bool {
	return scope == "." || rel == scope || strings.HasPrefix(rel, scope+"/")
}

// scanWord finds the files under scope holding name as a whole word
// (case-insensitively when fold is set), through search_code's engine,
// readers and wall, in path order. complete is false when the call's
// deadline or scanMaxFiles cut the scan short.
func scanWord(ctx context.Context, ws *Workspace, opts Options, scope, name string, fold bool) (files []string, complete bool, err error) {
	s := NewSearchCode(ws, opts)
	m, err := search.Compile(`\b`+regexp.QuoteMeta(name)+`\b`, false, fold)
	if err != nil {
		// A quoted name is always valid, but may be too long a
		// program under case folding.
		return nil, false, fmt.Errorf("scan for %q: %w", name, err)
	}
	budget := s.opts.Timeout
	if dl, ok := ctx.Deadline(); ok {
		budget = max(0, min(budget, time.Until(dl)))
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	deadline := time.Now().Add(budget)
	sc, filter, err := s.prepare(ctx, scope, budget)
	if err != nil {
		return nil, false, err
	}
	readers, closeRoot := s.readers(nil)
	defer closeRoot()
	job := search.Job{
		Files:       sc.files,
		NewReader:   filter.wrap(readers),
		Matcher:     m,
		MaxResults:  1,
		MaxFileSize: s.opts.MaxFileSize,
		Workers:     s.opts.Workers,
		Expired:     func() bool { return time.Now().After(deadline) },
	}
	res := job.Run(ctx)
	for i, h := range res.Hits {
		if h.Matches == 0 {
			continue
		}
		if len(files) == scanMaxFiles {
			return files, false, nil
		}
		files = append(files, res.Files[i])
	}
	return files, res.Complete, nil
}

// scanSymbols reads the definitions of files, and the occurrences of the
// identifier name in them, through the wall (OpenContent: deny-list and
// secret blobs), until ctx ends: Go files exactly, others through
// universal-ctags when it is installed (noCtags says it was needed and is
// not). Files that cannot be read are left out: a scan is a best effort.
func scanSymbols(ctx context.Context, ws *Workspace, maxSize int64, files []string, name string) (defs []symbols.Symbol, occs []symbols.Occurrence, complete, noCtags bool) {
	var other []symbols.Source
	complete = true
	for _, rel := range files {
		if ctx.Err() != nil {
			complete = false
			break
		}
		src, ok := readContent(ctx, ws, rel, maxSize)
		if !ok {
			continue
		}
		if !strings.HasSuffix(rel, ".go") {
			other = append(other, symbols.Source{Path: rel, Content: src})
			continue
		}
		f, _ := symbols.Go(rel, src)
		defs = append(defs, f.Symbols...)
		occs = appendOccurrences(occs, rel, src, f.Idents, name)
	}
	if len(other) == 0 {
		return defs, occs, complete, false
	}
	ct := scanCtags()
	var tagged []symbols.File
	if ct != nil {
		tagged, _ = ct.Tags(ctx, other)
	}
	for i, src := range other {
		var syms []symbols.Symbol
		if i < len(tagged) {
			syms = tagged[i].Symbols
		}
		defs = append(defs, syms...)
		occs = appendOccurrences(occs, src.Path, src.Content, symbols.Words(src.Content, syms), name)
	}
	return defs, occs, complete, ct == nil
}

// appendOccurrences appends the identifiers of one file that are name.
func appendOccurrences(occs []symbols.Occurrence, rel string, src []byte, ids []symbols.Ident, name string) []symbols.Occurrence {
	if name == "" {
		return occs
	}
	var lines *symbols.Lines
	for _, id := range ids {
		if id.Name != name {
			continue
		}
		if lines == nil {
			l := symbols.NewLines(src)
			lines = &l
		}
		occs = append(occs, symbols.Occurrence{Path: rel, Line: id.Line, Def: id.Def, Text: lines.Text(id.Line)})
	}
	return occs
}

// scanCtags is universal-ctags for scans, looked for once: nil when it is
// not installed.
var scanCtags = sync.OnceValue(func() *symbols.Ctags {
	ct, err := symbols.NewCtags(context.Background(), "", 10*time.Second)
	if err != nil {
		return nil
	}
	return ct
})

// noCtagsNote is what a scan's result says when files in other languages
// than Go had no definitions for want of universal-ctags.
const noCtagsNote = " universal-ctags is not installed: only Go files have definitions."

// readContent reads a text file of at most maxSize bytes through
// OpenContent.
func readContent(ctx context.Context, ws *Workspace, rel string, maxSize int64) ([]byte, bool) {
	f, fi, err := ws.OpenContent(ctx, rel)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi.Size() > maxSize {
		return nil, false
	}
	src, err := io.ReadAll(io.LimitReader(ctxio.Reader{Ctx: ctx, R: f}, maxSize+1))
	if err != nil || int64(len(src)) > maxSize || slices.Contains(src[:min(len(src), binarySniff)], 0) {
		return nil, false
	}
	return src, true
}

// matchesDef reports whether d is a definition of name ("Do" or
// "Client.Do"), case-insensitively when fold is set.
func matchesDef(d symbols.Symbol, name string, fold bool) bool {
	eq := func(a, b string) bool {
		if fold {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	container, base := splitQualified(name)
	if container != "" {
		return eq(d.Name, base) && eq(d.Container, container) || eq(d.Name, name)
	}
	return eq(d.Name, name)
}

// pathDepth is how many directories deep rel is.
func pathDepth(rel string) int { return strings.Count(rel, "/") }

// scanStopped is the note's sentence for a scan that could not finish:
// it reached scanMaxFiles (err nil), the call's time ran out, or the
// listing or search failed.
func scanStopped(err error) string {
	switch {
	case err == nil:
		return fmt.Sprintf(" The scan read the first %d files that name it, so there may be more than it shows.", scanMaxFiles)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return " The call's time ran out before the scan was done, so there may be more than it shows."
	}
	return " The scan failed (" + err.Error() + "), so there may be more than it shows."
}

// writeNote writes the index's (or the scan's) note once, as the last line.
func writeNote(b *strings.Builder, note string) {
	if note != "" {
		b.WriteString("Note: " + note + "\n")
	}
}
