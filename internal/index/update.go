package index

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/askrepo/askrepo/internal/symbols"

	"github.com/askrepo/askrepo/internal/tools"
)

// wallKey names what decides which files an index holds and what their
// text is: the checkout's place in its repository (the same commit read
// from another directory has other files under the same names) and its
// deny-list (a grown one can deny what a symlink read then).
func wallKey(ctx context.Context, ws *tools.Workspace) string {
	prefix, _ := ws.GitPrefix(ctx)
	return prefix + "\x00" + ws.DenyKey()
}

// Update builds the index of commit from prev, the index of an earlier
// commit of the same checkout, reading again only the paths in changed
// (as `git diff --name-only prev..commit` lists them) and the files prev
// did not have or could not read. With the same Options, the result is
// the index Build would make: files gone or now denied are dropped, and
// every file kept is checked against the wall again (OpenContent's check,
// without reading it), since a commit can make an unchanged file's content
// a secret by adding the same content under a denied name. When prev was
// built with another ctags setting (installed then, missing now) or ctags
// failed on some of its files, Update builds from scratch.
//
// Files are trusted to be as the commit has them: a checkout edited in
// place without a commit is only seen where changed names the path.
func Update(ctx context.Context, prev *Index, ws *tools.Workspace, commit string, changed []string, opts Options) (*Index, error) {
	r, err := newReader(ctx, ws, opts)
	if err != nil {
		return nil, err
	}
	// prev's text is of the files where it was read: another place in
	// the repository (or another deny-list) is built anew.
	wall := wallKey(ctx, ws)
	if prev == nil || prev.note != r.note() || prev.wall != wall {
		return Build(ctx, ws, commit, opts)
	}
	// A loaded index is checked whole before anything is carried over.
	if err := prev.Verify(); err != nil {
		return nil, fmt.Errorf("index %s from %s: %w", shortCommit(commit), shortCommit(prev.commit), err)
	}
	prev = prev.whole()
	paths, err := ws.Files(ctx)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", shortCommit(commit), err)
	}
	kept, read, err := prev.split(ctx, ws, paths, changed)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", shortCommit(commit), err)
	}
	var fresh []fileData
	if err := r.readAll(ctx, read, func(d []fileData) { fresh = append(fresh, d...) }); err != nil {
		return nil, fmt.Errorf("index %s: %w", shortCommit(commit), err)
	}
	sp, err := newSpill(opts.TempDir)
	if err != nil {
		return nil, err
	}
	defer sp.close()
	ix, err := prev.merge(kept, fresh, commit, r.note(), sp)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", shortCommit(commit), err)
	}
	ix.ws, ix.wall = ws, wall
	r.log.Debug("index updated", "commit", shortCommit(commit), "files", len(ix.files), "read", len(read))
	return ix, nil
}

// split sorts the new listing into the files whose prev entry still
// holds (by old id) and those to read.
func (prev *Index) split(ctx context.Context, ws *tools.Workspace, paths, changed []string) (kept map[string]uint32, read []string, err error) {
	dirty := map[string]bool{}
	for _, c := range changed {
		dirty[path.Clean(c)] = true
	}
	check := ws.ContentCheck(ctx)
	kept = map[string]uint32{}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		id, found := slices.BinarySearchFunc(prev.files, p, func(f fileEntry, p string) int { return strings.Compare(f.path, p) })
		if !found || dirty[p] || prev.files[id].size == notRead || isLink(ws, p) {
			// New, changed, unreadable last time, or a symlink: its text
			// is its target's, which changed lists under its own name.
			read = append(read, p)
			continue
		}
		switch err := check(p); {
		case err == nil:
			kept[p] = uint32(id)
		case errors.Is(err, tools.ErrSecretsUnknown):
			return nil, nil, err
		case errors.Is(err, tools.ErrDenied), errors.Is(err, tools.ErrNotRegular), errors.Is(err, tools.ErrOutside), errors.Is(err, fs.ErrNotExist):
			// Dropped, as Build would.
		default:
			read = append(read, p) // Build would try; so does Update
		}
	}
	return kept, read, nil
}

// isLink says whether the listed path p is a symlink. A listed path has
// no symlink above it (git tracks nothing beyond one, and the walk does
// not enter them), so its last component is the only one to look at.
func isLink(ws *tools.Workspace, p string) bool {
	fi, err := os.Lstat(filepath.Join(ws.Dir(), filepath.FromSlash(p)))
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// merge makes the new index from prev's kept files and the fresh ones,
// writing their text to text.
func (prev *Index) merge(kept map[string]uint32, fresh []fileData, commit, note string, text *spill) (*Index, error) {
	ix := &Index{commit: commit, note: note, diskBytes: new(atomic.Int64)}
	remap := make([]int32, len(prev.files))
	for i := range remap {
		remap[i] = -1
	}
	var keptIDs []uint32
	for _, id := range kept {
		keptIDs = append(keptIDs, id)
	}
	slices.Sort(keptIDs)
	nsyms := len(prev.syms)
	for _, d := range fresh {
		nsyms += len(d.syms)
	}
	ix.syms = make([]symbols.Symbol, 0, nsyms)
	ix.files = make([]fileEntry, 0, len(kept)+len(fresh))
	grams, occs := newGramBuilder(), newOccBuilder()
	k := 0
	for k < len(keptIDs) || len(fresh) > 0 {
		if len(fresh) > 0 && fresh[0].skip {
			fresh = fresh[1:]
			continue
		}
		id := uint32(len(ix.files))
		if len(fresh) == 0 || k < len(keptIDs) && prev.files[keptIDs[k]].path < fresh[0].path {
			old := prev.files[keptIDs[k]]
			remap[keptIDs[k]] = int32(id)
			e := old
			e.symStart = int32(len(ix.syms))
			ix.syms = append(ix.syms, prev.syms[old.symStart:old.symEnd]...)
			e.symEnd = int32(len(ix.syms))
			ix.files = append(ix.files, e)
			if e.size >= 0 {
				text.add(prev.text.of(int(keptIDs[k])))
			} else {
				text.add(nil)
			}
			k++
			continue
		}
		d := fresh[0]
		fresh = fresh[1:]
		e := fileEntry{path: d.path, size: d.size, symStart: int32(len(ix.syms))}
		ix.syms = append(ix.syms, d.syms...)
		e.symEnd = int32(len(ix.syms))
		ix.files = append(ix.files, e)
		grams.add(id, d.grams)
		occs.add(id, d.ids)
		text.add(d.text)
	}
	t, err := text.finish(ix.files)
	if err != nil {
		return nil, err
	}
	ix.text = t
	addKeys, addGrams := grams.finish()
	ix.gramKeys, ix.grams = mergeGrams(prev, remap, addKeys, addGrams, len(ix.files))
	addNames, addOccs := occs.finish()
	ix.names, ix.occs, ix.nOccs = mergeOccs(prev, remap, addNames, addOccs, len(ix.files))
	ix.derive()
	ix.rank()
	return ix, nil
}

// mergeGrams joins prev's trigram lists, file ids remapped (dropping
// files not kept), with the lists of the files read again.
func mergeGrams(prev *Index, remap []int32, addKeys []uint32, add lists, n int) ([]uint32, lists) {
	keys := make([]uint32, 0, len(prev.gramKeys)+len(addKeys))
	out := lists{offs: make([]uint32, 1, len(prev.gramKeys)+len(addKeys)+1), data: make([]byte, 0, len(prev.grams.data)+len(add.data))}
	var a, b, buf []uint32
	var list []byte
	i, j := 0, 0
	for i < len(prev.gramKeys) || j < len(addKeys) {
		a, b = a[:0], b[:0]
		var key uint32
		switch {
		case j >= len(addKeys) || i < len(prev.gramKeys) && prev.gramKeys[i] < addKeys[j]:
			key = prev.gramKeys[i]
			a = remapFiles(a, prev.grams.get(i), remap)
			i++
		case i >= len(prev.gramKeys) || addKeys[j] < prev.gramKeys[i]:
			key = addKeys[j]
			b = decodeFiles(b, add.get(j), n)
			j++
		default:
			key = addKeys[j]
			a = remapFiles(a, prev.grams.get(i), remap)
			b = decodeFiles(b, add.get(j), n)
			i++
			j++
		}
		buf = mergeSorted(buf[:0], a, b)
		if len(buf) == 0 {
			continue
		}
		list = list[:0]
		var enc fileEncoder
		for _, id := range buf {
			list = enc.add(list, id)
		}
		keys = append(keys, key)
		out.appendList(list)
	}
	return keys, out
}

func remapFiles(dst []uint32, b []byte, remap []int32) []uint32 {
	start := len(dst)
	dst = decodeFiles(dst, b, len(remap))
	w := start
	for _, id := range dst[start:] {
		if nid := remap[id]; nid >= 0 {
			dst[w] = uint32(nid)
			w++
		}
	}
	return dst[:w]
}

// mergeSorted appends the union of sorted a and b (disjoint) to dst.
func mergeSorted(dst, a, b []uint32) []uint32 {
	for len(a) > 0 && len(b) > 0 {
		if a[0] < b[0] {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	return append(append(dst, a...), b...)
}

// mergeOccs is mergeGrams for occurrence lists.
func mergeOccs(prev *Index, remap []int32, addNames []string, add lists, n int) ([]string, lists, int) {
	names := make([]string, 0, len(prev.names)+len(addNames))
	out := lists{offs: make([]uint32, 1, len(prev.names)+len(addNames)+1), data: make([]byte, 0, len(prev.occs.data)+len(add.data))}
	total := 0
	var a, b []occ
	var list []byte
	oldN := len(prev.files)
	i, j := 0, 0
	for i < len(prev.names) || j < len(addNames) {
		a, b = a[:0], b[:0]
		var name string
		takeOld := j >= len(addNames) || i < len(prev.names) && prev.names[i] <= addNames[j]
		takeNew := i >= len(prev.names) || j < len(addNames) && addNames[j] <= prev.names[i]
		if takeOld {
			name = prev.names[i]
			decodeOccs(prev.occs.get(i), oldN, func(o occ) {
				if nid := remap[o.file]; nid >= 0 {
					o.file = uint32(nid)
					a = append(a, o)
				}
			})
			i++
		}
		if takeNew {
			name = addNames[j]
			decodeOccs(add.get(j), n, func(o occ) { b = append(b, o) })
			j++
		}
		if len(a)+len(b) == 0 {
			continue
		}
		list = list[:0]
		var enc occEncoder
		for len(a) > 0 || len(b) > 0 {
			var o occ
			if len(b) == 0 || len(a) > 0 && a[0].file < b[0].file {
				o, a = a[0], a[1:]
			} else {
				o, b = b[0], b[1:]
			}
			list = enc.add(list, o)
			total++
		}
		names = append(names, name)
		out.appendList(list)
	}
	return names, out, total
}
