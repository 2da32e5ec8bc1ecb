// Package index builds, updates, saves and loads the code index of one
// checkout at one commit: the file list, a trigram index of the text for
// search_code's candidates, the symbol table, and the identifier
// occurrences, with per-file reference counts for ranking. It implements
// tools.CodeIndex.
//
// Everything it holds is read through the workspace's wall
// (tools.Workspace.OpenContent): denied files and files whose content is a
// secret blob are never indexed, so no query can name them.
//
// It imports, of askrepo's packages, only tools (the Workspace and the
// contract), symbols (reading definitions) and gitexec; the tools and the
// service import it, never the other way round.
package index

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askrepo/askrepo/internal/symbols"
	"github.com/askrepo/askrepo/internal/tools"
)

var _ tools.CodeIndex = (*Index)(nil)

// Options tune Build and Update. The zero value finds ctags on PATH.
type Options struct {
	// Ctags is the ctags to run: "" finds "ctags" on PATH, "off" runs
	// none (only Go files then have symbols).
	Ctags string
	// CtagsTimeout bounds one ctags process (one batch of files); zero
	// means 30s.
	CtagsTimeout time.Duration
	// TempDir is where a build writes the files' text before mapping it
	// (an unlinked file); "" means os.TempDir(). The service gives its
	// index directory, on the disk the saved index goes to.
	TempDir string
	// MaxFileBytes: larger files are listed but not read, as search_code
	// skips them. Zero means tools.DefaultSearchMaxFileSize.
	MaxFileBytes int64
	// Workers read and parse files in parallel; zero means GOMAXPROCS.
	Workers int
	Logger  *slog.Logger
}

// Index is the code index of one checkout at one commit. It is immutable
// once built or loaded and safe for concurrent use.
type Index struct {
	commit string
	note   string
	wall   string      // the wall it was read through (see wallKey)
	files  []fileEntry // sorted by path; a file's id is its position

	gramKeys []uint32 // sorted
	grams    lists    // file lists, parallel to gramKeys
	gramSums []uint32 // a loaded index's checksum of each list (listSum); nil when built

	names []string // sorted distinct identifiers
	occs  lists    // occurrence lists, parallel to names
	nOccs int

	syms []symbols.Symbol // in file id then line order

	text *text // the files' text (see text.go)

	// Derived when built or loaded, never stored.
	byName   []int32 // indices in syms, sorted by name (see named)
	symNames []string
	unread   []uint32 // ids of files not in the text index: always candidates

	lazy *lazy    // shared by the copies WithWorkspace makes
	rest *rest    // a loaded index's names and symbols, until decoded (see whole); nil when built
	hold *mapping // the file a loaded index reads in place, kept mapped while any copy is held

	ws        *tools.Workspace // reads occurrence lines; nil after Load until WithWorkspace
	diskBytes *atomic.Int64    // the saved size, once saved or loaded
}

// lazy is what is worked out on first use only.
type lazy struct {
	foldOnce sync.Once
	byFold   map[string][]int32 // lower-cased name → indices in syms

	rankOnce sync.Once
	ranked   []tools.FileSymbols
}

func atomicInt(v int64) *atomic.Int64 {
	a := new(atomic.Int64)
	a.Store(v)
	return a
}

// fileEntry is one file of the checkout that the wall lets through.
type fileEntry struct {
	path string
	// size is the bytes in the text index, or, when the file is not in
	// it, why (notHuge, notBinary, notRead): then it is a candidate for
	// every query.
	size     int64
	symStart int32 // its symbols are syms[symStart:symEnd]
	symEnd   int32
	refs     int32 // see Files
}

// Why a file is listed but not in the text index.
const (
	notHuge   = -1 // over MaxFileBytes
	notBinary = -2 // a NUL byte in its first 8 KiB
	notRead   = -3 // it could not be read
	minSize   = notRead
)

// Unindexed returns, sorted, the files listed but not in the text index,
// by why: binary (a NUL byte in the first 8 KiB, as search_code decides),
// over the size limit, or unreadable when the index was built.
// Candidates returns them for every query, so a search reads and skips
// them as a scan would; a caller that counts them from these lists
// instead can leave them out of what it reads and report the same.
func (ix *Index) Unindexed() (binary, huge, unreadable []string) {
	for _, id := range ix.unread {
		f := ix.files[id]
		switch f.size {
		case notBinary:
			binary = append(binary, f.path)
		case notHuge:
			huge = append(huge, f.path)
		default:
			unreadable = append(unreadable, f.path)
		}
	}
	return binary, huge, unreadable
}

// Paths returns every file the index lists, sorted, without their
// symbols.
func (ix *Index) Paths() []string {
	out := make([]string, len(ix.files))
	for id, f := range ix.files {
		out[id] = f.path
	}
	return out
}

// FileCount is how many files the index lists: len(Files()), without
// decoding a loaded index's symbols.
func (ix *Index) FileCount() int { return len(ix.files) }

// Stats describe an index's coverage and size.
type Stats struct {
	Commit      string
	Files       int   // files listed
	TextFiles   int   // files in the text index
	TextBytes   int64 // bytes of text indexed
	Symbols     int
	Names       int // distinct identifiers
	Occurrences int // (identifier, file, line) entries
	// DiskBytes is the size of the saved index, once saved or loaded.
	DiskBytes int64
}

// Stats returns the index's coverage and size.
func (ix *Index) Stats() Stats {
	s := Stats{Commit: ix.commit, Files: len(ix.files), Symbols: len(ix.syms), Names: len(ix.names), Occurrences: ix.nOccs, DiskBytes: ix.diskBytes.Load()}
	if r := ix.rest; r != nil {
		s.Symbols, s.Names, s.Occurrences = int(min(r.nsyms, 1<<40)), int(min(r.nnames, 1<<40)), int(min(r.nOccs, 1<<40))
	}
	for _, f := range ix.files {
		if f.size >= 0 {
			s.TextFiles++
			s.TextBytes += f.size
		}
	}
	return s
}

// WithWorkspace returns the index reading the lines of References through
// ws (the checkout it describes); an index fresh from Load has no
// workspace, and its occurrences have no Text until given one.
func (ix *Index) WithWorkspace(ws *tools.Workspace) *Index {
	c := *ix
	c.ws = ws
	return &c
}

// Commit is the commit the index describes.
func (ix *Index) Commit() string { return ix.commit }

// Note says what the index lacks, or "".
func (ix *Index) Note() string {
	if ix.damage() != nil {
		return "the saved code index of this commit is damaged: it has no symbols or references until it is built again"
	}
	return ix.note
}

// derive computes what is kept only in memory.
func (ix *Index) derive() {
	ix.lazy = &lazy{}
	ix.deriveFiles()
	ix.deriveSymbols()
}

// deriveFiles lists the files not in the text index.
func (ix *Index) deriveFiles() {
	ix.unread = nil
	for id, f := range ix.files {
		if f.size < 0 {
			ix.unread = append(ix.unread, uint32(id))
		}
	}
}

// deriveSymbols gives each symbol its path and sorts them by name.
func (ix *Index) deriveSymbols() {
	for _, f := range ix.files {
		for i := f.symStart; i < f.symEnd && int(i) < len(ix.syms); i++ {
			ix.syms[i].Path = f.path
		}
	}
	// A sorted index, not a map: a tenth of the memory for 256k symbols.
	// Sorted as (name, index) pairs side by side, which is several times
	// faster than sorting indices that point into the symbols.
	type named struct {
		name string
		i    int32
	}
	pairs := make([]named, len(ix.syms))
	for i, s := range ix.syms {
		pairs[i] = named{s.Name, int32(i)}
	}
	slices.SortFunc(pairs, func(a, b named) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return int(a.i - b.i)
	})
	ix.byName = make([]int32, len(pairs))
	ix.symNames = nil
	for k, p := range pairs {
		ix.byName[k] = p.i
		if len(ix.symNames) == 0 || ix.symNames[len(ix.symNames)-1] != p.name {
			ix.symNames = append(ix.symNames, p.name)
		}
	}
}

// named returns the indices of the symbols called name, in index order.
func (ix *Index) named(name string) []int32 {
	i, _ := slices.BinarySearchFunc(ix.byName, name, func(s int32, n string) int { return strings.Compare(ix.syms[s].Name, n) })
	j := i
	for j < len(ix.byName) && ix.syms[ix.byName[j]].Name == name {
		j++
	}
	return ix.byName[i:j:j]
}

// Candidates returns the files that may hold every literal: those whose
// text has all the literals' trigrams, and those not in the text index.
// The index folds ASCII case, so fold changes nothing here: the result
// is a superset of the matches either way.
func (ix *Index) Candidates(lits []string, fold bool) ([]string, bool) {
	if len(lits) == 0 {
		return nil, false
	}
	var want []uint32
	for _, l := range lits {
		if len(l) < 3 {
			return nil, false
		}
		want = append(want, litGrams(l)...)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	// Start from the shortest list: the rest only narrow it.
	type plist struct{ b []byte }
	ls := make([]plist, 0, len(want))
	for _, g := range want {
		i, ok := slices.BinarySearch(ix.gramKeys, g)
		if !ok {
			ls = nil
			break
		}
		b, ok := ix.gramList(i)
		if !ok {
			return nil, false // damaged: the caller scans
		}
		ls = append(ls, plist{b})
	}
	var ids []uint32
	if len(ls) > 0 {
		slices.SortFunc(ls, func(a, b plist) int { return len(a.b) - len(b.b) })
		ids = decodeFiles(nil, ls[0].b, len(ix.files))
		var buf []uint32
		for _, l := range ls[1:] {
			if len(ids) == 0 {
				break
			}
			buf = decodeFiles(buf[:0], l.b, len(ix.files))
			ids = intersect(ids, buf)
		}
	}
	out := make([]string, 0, len(ids)+len(ix.unread))
	i, j := 0, 0
	for i < len(ids) || j < len(ix.unread) {
		var id uint32
		switch {
		case j >= len(ix.unread) || i < len(ids) && ids[i] < ix.unread[j]:
			id = ids[i]
			i++
		case i >= len(ids) || ix.unread[j] < ids[i]:
			id = ix.unread[j]
			j++
		default:
			id = ids[i]
			i++
			j++
		}
		out = append(out, ix.files[id].path)
	}
	return out, true
}

// Definitions returns the symbols named name, and for "Container.Name"
// the members of that container; case-insensitively when fold is set.
func (ix *Index) Definitions(name string, fold bool) []symbols.Symbol {
	ix = ix.whole()
	lookup, key := ix.named, name
	if fold {
		table := ix.folded()
		lookup = func(k string) []int32 { return table[k] }
		key = strings.ToLower(name)
	}
	seen := map[int32]bool{}
	var out []symbols.Symbol
	for _, i := range lookup(key) {
		seen[i] = true
		out = append(out, ix.syms[i])
	}
	if dot := strings.LastIndexByte(name, '.'); dot > 0 && dot < len(name)-1 {
		container, member := name[:dot], name[dot+1:]
		if fold {
			member = strings.ToLower(member)
		}
		for _, i := range lookup(member) {
			c := ix.syms[i].Container
			if !seen[i] && (c == container || fold && strings.EqualFold(c, container)) {
				out = append(out, ix.syms[i])
			}
		}
	}
	return out
}

// folded is the symbol table by lower-cased name.
func (ix *Index) folded() map[string][]int32 {
	l := ix.lazy
	l.foldOnce.Do(func() {
		l.byFold = make(map[string][]int32, len(ix.symNames))
		for i, s := range ix.syms {
			low := strings.ToLower(s.Name)
			l.byFold[low] = append(l.byFold[low], int32(i))
		}
	})
	return l.byFold
}

// SymbolNames returns every distinct symbol name, sorted. The slice is
// shared: do not change it.
func (ix *Index) SymbolNames() []string { return ix.whole().symNames }

// References returns where the identifier name occurs, definitions
// marked, in path and line order. In Go files these are identifiers of the
// code; in other files, word matches of the name (comments included). The
// lines' text is read through the workspace when the index has one.
func (ix *Index) References(name string) []symbols.Occurrence {
	ix = ix.whole()
	i, ok := slices.BinarySearch(ix.names, name)
	if !ok {
		return nil
	}
	var out []symbols.Occurrence
	decodeOccs(ix.occs.get(i), len(ix.files), func(o occ) {
		out = append(out, symbols.Occurrence{Path: ix.files[o.file].path, Line: int(o.line), Def: o.def})
	})
	ix.fillText(out)
	return out
}
