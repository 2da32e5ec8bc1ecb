package tools

import (
	"encoding/json"

	"github.com/askrepo/askrepo/internal/search"
	"github.com/askrepo/askrepo/internal/symbols"
)

// CodeIndex is what the code-intelligence tools and search_code ask of an
// index of one checkout at one commit: which files can hold a literal, where
// a symbol is defined, where an identifier is used, and which files matter
// most. It is declared here, where it is used; internal/index builds it, through
// the same Workspace wall as every tool, so nothing denied is ever in it.
//
// An implementation is immutable once built and safe for concurrent use.
type CodeIndex interface {
	// Commit is the commit the index describes.
	Commit() string
	// Candidates returns, sorted, the files that may contain every one of
	// lits (ASCII case-folded when fold is set): a superset of the files
	// that do. ok is false when the index cannot narrow the search for
	// these literals (one is too short to index), and the caller scans
	// every file.
	Candidates(lits []string, fold bool) (files []string, ok bool)
	// Definitions returns the symbols named name, or "Container.Name"
	// (e.g. "Client.Do"); case-insensitively when fold is set. Unranked.
	Definitions(name string, fold bool) []symbols.Symbol
	// SymbolNames returns every distinct symbol name, for suggesting close
	// names when nothing matches.
	SymbolNames() []string
	// References returns where the identifier name occurs, its definitions
	// included (Def set), in path and line order. In Go files only
	// identifiers count, not comments or strings.
	References(name string) []symbols.Occurrence
	// Files returns every indexed file with its symbols in line order,
	// most referenced first (references into its symbols from other
	// files).
	Files() []FileSymbols
	// Note is one sentence a result should carry when the index covers
	// less than it could ("universal-ctags is not installed: only Go files
	// have symbols"); "" when it covers all it can.
	Note() string
}

// FileSymbols is one file of the index and the symbols it defines.
type FileSymbols struct {
	Path    string
	Refs    int // references into this file's symbols from other files
	Symbols []symbols.Symbol
}

// IndexSource gives a tool the index of the checkout it reads, when one is
// ready. When none is (still being built, or failed), idx is nil and note
// says so in a short sentence for the result ("the code index for this
// commit is still being built; these results come from a full scan").
type IndexSource func() (idx CodeIndex, note string)

// IndexUser is implemented by the tools that can use a code index, to say
// whether one call would: search_code only for a pattern with a literal
// part the index can narrow by, the symbol tools always. A command that
// runs one call (bot tool) loads no index for a call that would not use
// it; loading one costs more than such a call.
type IndexUser interface {
	UsesIndex(input json.RawMessage) bool
}

// UsesIndex reports whether call would use a code index: its tool says so
// (see IndexUser); an unknown tool, or one that never does, would not. It
// reads only the call's arguments, so the tools of Default(nil, …), over
// no workspace, can answer it before a checkout is opened.
func (r *Registry) UsesIndex(call Call) bool {
	u, ok := r.tools[call.Name].(IndexUser)
	return ok && u.UsesIndex(call.Input)
}

// UsesIndex implements IndexUser: a pattern the index can narrow by.
func (s *SearchCode) UsesIndex(input json.RawMessage) bool {
	args, err := ParseArgs[searchCodeArgs](input)
	if err != nil {
		return false
	}
	m, err := search.Compile(args.Pattern, args.Literal, args.IgnoreCase)
	if err != nil {
		return false
	}
	_, _, ok := m.RequiredLiterals()
	return ok
}

// UsesIndex implements IndexUser: definitions come from the index.
func (*FindSymbol) UsesIndex(json.RawMessage) bool { return true }

// UsesIndex implements IndexUser: uses come from the index.
func (*FindReferences) UsesIndex(json.RawMessage) bool { return true }

// UsesIndex implements IndexUser: the ranked files come from the index.
func (*RepoMap) UsesIndex(json.RawMessage) bool { return true }
