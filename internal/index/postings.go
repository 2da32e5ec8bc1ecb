package index

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// Posting lists are kept as they are stored: one byte slice per kind of
// list, cut by offsets, each list uvarint delta encoded. On Go's src/ that
// is about 1.3 bytes per (trigram, file) pair against 4 for a []uint32,
// and a query decodes only the few lists it needs.
//
// A list of files holds file id + 1 minus the previous one (so the first
// entry, and only it, is the id + 1). A list of occurrences holds, for each
// (file, line), the file delta as above (0: the same file) and then
// line<<1|def, the line counted from the previous one when the file is the
// same. Decoding never trusts the bytes: a list that ends early or names a
// file past the end is cut there, so a damaged index answers less rather
// than panicking.

// lists is many posting lists in one buffer: list i is
// data[offs[i]:offs[i+1]].
type lists struct {
	offs []uint32
	data []byte
}

func (l *lists) len() int { return max(len(l.offs)-1, 0) }

func (l *lists) get(i int) []byte {
	if i < 0 || i+1 >= len(l.offs) {
		return nil
	}
	a, b := l.offs[i], l.offs[i+1]
	if a > b || int(b) > len(l.data) {
		return nil
	}
	return l.data[a:b]
}

// appendList adds a list after the last one.
func (l *lists) appendList(b []byte) {
	l.data = append(l.data, b...)
	l.offs = append(l.offs, uint32(len(l.data)))
}

// decodeFiles appends the file ids of list b, each below n, to dst.
func decodeFiles(dst []uint32, b []byte, n int) []uint32 {
	var prev uint64
	for len(b) > 0 {
		d, k := binary.Uvarint(b)
		if k <= 0 || d == 0 {
			break
		}
		b = b[k:]
		prev += d
		if prev > uint64(n) {
			break
		}
		dst = append(dst, uint32(prev-1))
	}
	return dst
}

// fileEncoder appends file ids in increasing order to a list.
type fileEncoder struct{ last uint32 }

func (e *fileEncoder) add(b []byte, id uint32) []byte {
	b = binary.AppendUvarint(b, uint64(id+1-e.last))
	e.last = id + 1
	return b
}

// occ is one entry of an occurrence list.
type occ struct {
	file, line uint32
	def        bool
}

// occEncoder appends occurrences in (file, line) order to a list.
type occEncoder struct{ file, line uint32 } // file is id + 1

func (e *occEncoder) add(b []byte, o occ) []byte {
	d := o.file + 1 - e.file
	line := o.line
	if d == 0 {
		line -= e.line
	}
	v := uint64(line) << 1
	if o.def {
		v |= 1
	}
	b = binary.AppendUvarint(b, uint64(d))
	b = binary.AppendUvarint(b, v)
	e.file, e.line = o.file+1, o.line
	return b
}

// decodeOccs calls fn for each occurrence in list b whose file is below n.
func decodeOccs(b []byte, n int, fn func(occ)) {
	var file, line uint64
	for len(b) > 0 {
		d, k := binary.Uvarint(b)
		if k <= 0 {
			return
		}
		b = b[k:]
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return
		}
		b = b[k:]
		if d == 0 && file == 0 {
			return // "the same file" before any file
		}
		if d == 0 {
			line += v >> 1
		} else {
			file += d
			line = v >> 1
		}
		if file > uint64(n) || line > 1<<31 {
			return
		}
		fn(occ{file: uint32(file - 1), line: uint32(line), def: v&1 == 1})
	}
}

// builder collects one posting list per key, for files added in id
// order, and hands them over sorted by key.
type builder[K cmp.Ordered] struct {
	idx  map[K]int32
	keys []K
	bufs [][]byte
}

// slot returns the index of k's list, and whether k is new.
func (b *builder[K]) slot(k K) (int32, bool) {
	if i, ok := b.idx[k]; ok {
		return i, false
	}
	if b.idx == nil {
		b.idx = map[K]int32{}
	}
	i := int32(len(b.keys))
	b.idx[k] = i
	b.keys = append(b.keys, k)
	b.bufs = append(b.bufs, nil)
	return i, true
}

// finish returns the keys, sorted, and their lists in one buffer.
func (b *builder[K]) finish() ([]K, lists) {
	order := make([]int32, len(b.keys))
	size := 0
	for i := range order {
		order[i] = int32(i)
		size += len(b.bufs[i])
	}
	slices.SortFunc(order, func(x, y int32) int { return cmp.Compare(b.keys[x], b.keys[y]) })
	keys := make([]K, len(order))
	l := lists{offs: make([]uint32, 1, len(order)+1), data: make([]byte, 0, size)}
	for k, i := range order {
		keys[k] = b.keys[i]
		l.appendList(b.bufs[i])
	}
	return keys, l
}

// gramBuilder collects the trigram lists of files added in id order.
type gramBuilder struct {
	builder[uint32]
	encs []fileEncoder
}

func newGramBuilder() *gramBuilder { return &gramBuilder{} }

func (g *gramBuilder) add(file uint32, grams []uint32) {
	for _, t := range grams {
		i, isNew := g.slot(t)
		if isNew {
			g.encs = append(g.encs, fileEncoder{})
		}
		g.bufs[i] = g.encs[i].add(g.bufs[i], file)
	}
}

// occBuilder collects the occurrence lists of files added in id order.
type occBuilder struct {
	builder[string]
	encs []occEncoder
	n    int // entries
}

func newOccBuilder() *occBuilder { return &occBuilder{} }

// add takes a file's identifiers sorted by name and line, one per line.
func (o *occBuilder) add(file uint32, ids []ident) {
	for _, id := range ids {
		i, isNew := o.slot(id.name)
		if isNew {
			o.encs = append(o.encs, occEncoder{})
		}
		o.bufs[i] = o.encs[i].add(o.bufs[i], occ{file: file, line: id.line, def: id.def})
		o.n++
	}
}

// intersect returns the ids in both sorted a and b, in a's storage.
func intersect(a, b []uint32) []uint32 {
	out := a[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}
