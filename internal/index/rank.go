package index

import (
	"cmp"
	"context"
	"io"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/symbols"
	"github.com/askrepo/askrepo/internal/tools"
)

// Files returns every indexed file with its symbols, most referenced
// first, then by path. A file's Refs counts the lines, in other files, using
// the top-level names it defines (members' names, such as String or Name,
// say too little about who is meant), of three bytes or more. A name
// defined in k files gives each of them 1/k of its uses; a Go name is
// counted in Go files only and another language's outside them; a Go name
// that is not exported counts only within its own directory, and one
// defined in a test file only in that directory's test files, the only
// places Go lets them be used; files under testdata neither define nor
// use. The counts are worked out when the index is built (and saved with
// it); the list is sorted on the first call and shared: do not change it.
func (ix *Index) Files() []tools.FileSymbols {
	ix = ix.whole()
	l := ix.lazy
	l.rankOnce.Do(func() {
		out := make([]tools.FileSymbols, len(ix.files))
		for id, f := range ix.files {
			out[id] = tools.FileSymbols{Path: f.path, Refs: int(f.refs), Symbols: ix.syms[f.symStart:f.symEnd:f.symEnd]}
		}
		slices.SortStableFunc(out, func(a, b tools.FileSymbols) int { return cmp.Compare(b.Refs, a.Refs) })
		l.ranked = out
	})
	return l.ranked
}

// minRankName: shorter names (i, x, ok, db) are mostly local variables
// that happen to share a top-level name, and are not counted.
const minRankName = 3

// rankFile is what ranking needs to know of a file.
type rankFile struct {
	dir      string
	goFile   bool
	testdata bool
}

// rank sets each file's refs (see Files); the index is built or updated
// with them, so a query never waits for them, and saved with them.
func (ix *Index) rank() {
	for id, r := range ix.refCounts() {
		ix.files[id].refs = int32(min(r+0.5, 1<<31-1))
	}
}

func (ix *Index) refCounts() []float64 {
	files := make([]rankFile, len(ix.files))
	for id, f := range ix.files {
		dir := path.Dir(f.path)
		files[id] = rankFile{dir: dir, goFile: path.Ext(f.path) == ".go",
			testdata: dir == "testdata" || strings.HasPrefix(dir, "testdata/") || strings.Contains(dir, "/testdata")}
	}
	refs := make([]float64, len(ix.files))
	type use struct {
		file uint32
		n    int
	}
	var uses []use
	var definers []uint32
	next := 0 // ix.names and ix.byName are both in name order: walk them together
	for i, name := range ix.names {
		for next < len(ix.byName) && ix.syms[ix.byName[next]].Name < name {
			next++
		}
		end := next
		for end < len(ix.byName) && ix.syms[ix.byName[end]].Name == name {
			end++
		}
		defs := ix.byName[next:end]
		next = end
		if len(name) < minRankName || len(defs) == 0 {
			continue
		}
		definers = definers[:0]
		local, tests := true, true // every definition is an unexported Go name; in a Go test file
		for _, s := range defs {
			sym := &ix.syms[s]
			id := ix.fileOf(s)
			if sym.Container != "" || files[id].testdata {
				continue
			}
			definers = append(definers, id)
			goName := sym.Lang == "go"
			local = local && goName && !isExported(name)
			tests = tests && goName && sym.Test
		}
		if len(definers) == 0 {
			continue
		}
		slices.Sort(definers)
		definers = slices.Compact(definers)
		uses = uses[:0]
		decodeOccs(ix.occs.get(i), len(ix.files), func(o occ) {
			if o.def || files[o.file].testdata {
				return
			}
			if n := len(uses); n > 0 && uses[n-1].file == o.file {
				uses[n-1].n++
				return
			}
			uses = append(uses, use{o.file, 1})
		})
		share := 1 / float64(len(definers))
		for _, d := range definers {
			def := files[d]
			for _, u := range uses {
				user := files[u.file]
				if u.file == d || user.goFile != def.goFile || (local || tests) && user.dir != def.dir ||
					tests && !strings.HasSuffix(ix.files[u.file].path, "_test.go") {
					continue
				}
				refs[d] += float64(u.n) * share
			}
		}
	}
	return refs
}

// fileOf is the id of the file defining syms[s].
func (ix *Index) fileOf(s int32) uint32 {
	id, _ := slices.BinarySearchFunc(ix.files, s, func(f fileEntry, s int32) int {
		switch {
		case f.symEnd <= s:
			return -1
		case f.symStart > s:
			return 1
		}
		return 0
	})
	return uint32(id)
}

func isExported(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsUpper(r)
}

// maxTextFile bounds the files read to show occurrence lines.
const maxTextFile = 4 << 20

// fillText reads the lines of occurrences through the workspace's wall,
// each file once. A file that no longer opens leaves its lines empty.
func (ix *Index) fillText(occs []symbols.Occurrence) {
	if ix.ws == nil {
		return
	}
	ctx := context.Background()
	for start := 0; start < len(occs); {
		end := start + 1
		for end < len(occs) && occs[end].Path == occs[start].Path {
			end++
		}
		if src := ix.read(ctx, occs[start].Path); src != nil {
			lines := symbols.NewLines(src)
			for k := start; k < end; k++ {
				occs[k].Text = lines.Text(occs[k].Line)
			}
		}
		start = end
	}
}

func (ix *Index) read(ctx context.Context, rel string) []byte {
	f, fi, err := ix.ws.OpenContent(ctx, rel)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi.Size() > maxTextFile {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTextFile))
	if err != nil {
		return nil
	}
	return b
}
