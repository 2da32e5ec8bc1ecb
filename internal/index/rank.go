package index

import (
	"cmp"
	"context"
	"io"
	"path"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/symbols"
	"github.com/askrepo/askrepo/internal/tools"
)

// Files returns every indexed file with its symbols, most referenced
// first, then by path. A file's Refs counts the uses of the names it
// defines in other files: a name defined in k files gives each of them
// 1/k of its uses (so "String", defined everywhere, lifts no file), and a
// Go name that is not exported counts only within its own directory, the
// only place Go lets it be used. Computed once, on first call; the slice
// is shared: do not change it.
func (ix *Index) Files() []tools.FileSymbols {
	ix.ranked.Do(func() {
		refs := ix.refCounts()
		out := make([]tools.FileSymbols, len(ix.files))
		for id, f := range ix.files {
			out[id] = tools.FileSymbols{Path: f.path, Refs: int(refs[id] + 0.5), Symbols: ix.syms[f.symStart:f.symEnd:f.symEnd]}
		}
		slices.SortStableFunc(out, func(a, b tools.FileSymbols) int { return cmp.Compare(b.Refs, a.Refs) })
		ix.rankedList = out
	})
	return ix.rankedList
}

func (ix *Index) refCounts() []float64 {
	refs := make([]float64, len(ix.files))
	type use struct {
		file uint32
		n    int
	}
	var uses []use
	var definers []uint32
	for i, name := range ix.names {
		defs := ix.byName[name]
		if len(defs) == 0 {
			continue
		}
		definers = definers[:0]
		local := true // every definition is an unexported Go name
		for _, s := range defs {
			id := ix.fileOf(s)
			if len(definers) == 0 || definers[len(definers)-1] != id {
				definers = append(definers, id)
			}
			if ix.syms[s].Lang != "go" || isExported(name) {
				local = false
			}
		}
		definers = slices.Compact(definers)
		uses = uses[:0]
		decodeOccs(ix.occs.get(i), len(ix.files), func(o occ) {
			if o.def {
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
			dir := path.Dir(ix.files[d].path)
			for _, u := range uses {
				if u.file == d || local && path.Dir(ix.files[u.file].path) != dir {
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
