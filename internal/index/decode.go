package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/askrepo/askrepo/internal/symbols"
)

func decode(data []byte) (*Index, error) {
	if len(data) < len(magic)+4 || string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: no code index header", ErrFormat)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	d := decoder{b: body[len(magic):]}
	if v := d.uint(); v != formatVersion {
		return nil, fmt.Errorf("%w: format version %d, this program reads %d", ErrFormat, v, formatVersion)
	}
	if crc32.ChecksumIEEE(body) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch (damaged or truncated)", ErrFormat)
	}
	ix := &Index{diskBytes: atomicInt(int64(len(data)))}
	ix.commit = d.str()
	ix.note = d.str()
	nsyms := d.files(ix)
	d.grams(ix)
	d.names(ix)
	d.symbols(ix, nsyms)
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, d.err)
	}
	ix.derive()
	return ix, nil
}

// files reads the file table and returns how many symbols it names.
func (d *decoder) files(ix *Index) int64 {
	nfiles := d.count()
	ix.files = make([]fileEntry, 0, nfiles)
	prev := ""
	var nsyms int64
	for range nfiles {
		p := d.frontCoded(prev)
		prev = p
		size := int64(d.uint()) + minSize
		n := int64(d.count())
		refs := d.uint()
		if d.err == nil && (p == "" || n < 0 || size < minSize || refs >= 1<<31) {
			d.fail("bad file entry")
		}
		ix.files = append(ix.files, fileEntry{path: p, size: size, symStart: int32(nsyms), symEnd: int32(nsyms + n), refs: int32(refs)})
		nsyms += n
	}
	return nsyms
}

func (d *decoder) grams(ix *Index) {
	nkeys := d.count()
	ix.gramKeys = make([]uint32, 0, nkeys)
	var k uint64
	for i := range nkeys {
		delta := d.uint()
		if i > 0 && delta == 0 {
			d.fail("trigram keys out of order")
		}
		k += delta
		if k >= 1<<24 {
			d.fail("trigram key out of range")
		}
		ix.gramKeys = append(ix.gramKeys, uint32(k))
	}
	ix.grams = d.lists(nkeys)
}

func (d *decoder) names(ix *Index) {
	nnames := d.count()
	ix.names = make([]string, 0, nnames)
	prev := ""
	for i := range nnames {
		n := d.frontCoded(prev)
		if i > 0 && n <= prev {
			d.fail("names out of order")
		}
		prev = n
		ix.names = append(ix.names, n)
	}
	ix.occs = d.lists(nnames)
	ix.nOccs = int(d.uint())
}

func (d *decoder) symbols(ix *Index, nsyms int64) {
	kinds, langs := d.table(), d.table()
	if d.err == nil && nsyms > int64(len(d.b)) {
		d.fail("more symbols than bytes")
	}
	if d.err != nil {
		return
	}
	ix.syms = make([]symbols.Symbol, 0, nsyms)
	for range nsyms {
		if d.err != nil {
			return
		}
		s := symbols.Symbol{Name: d.str()}
		s.Kind = d.pick(kinds)
		s.Lang = d.pick(langs)
		s.Container, s.Signature, s.Doc = d.str(), d.str(), d.str()
		s.Line = int(d.uint())
		s.EndLine = s.Line + int(d.uint())
		f := d.byte()
		s.Exported, s.Test, s.Generated = f&1 != 0, f&2 != 0, f&4 != 0
		ix.syms = append(ix.syms, s)
	}
}

// decoder reads the body; the first problem sticks and every later read
// returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = errors.New(msg)
	}
	d.b = nil
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of items, each at least a byte long.
func (d *decoder) count() int {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.fail("count past the end")
		return 0
	}
	return int(n)
}

func (d *decoder) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("truncated")
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) str() string { return string(d.bytes(d.uint())) }

func (d *decoder) byte() byte {
	b := d.bytes(1)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

func (d *decoder) frontCoded(prev string) string {
	n := d.uint()
	if n > uint64(len(prev)) {
		d.fail("bad shared prefix")
		return ""
	}
	rest := d.str()
	var b strings.Builder
	b.Grow(int(n) + len(rest))
	b.WriteString(prev[:n])
	b.WriteString(rest)
	return b.String()
}

func (d *decoder) lists(n int) lists {
	l := lists{offs: make([]uint32, 1, n+1)}
	var off uint64
	for range n {
		off += d.uint()
		if off >= 1<<32 {
			d.fail("list past the end")
		}
		l.offs = append(l.offs, uint32(off))
	}
	size := d.uint()
	if size != off {
		d.fail("list sizes do not add up")
	}
	// A copy, so the file's buffer is not kept for the lists' sake.
	l.data = bytes.Clone(d.bytes(size))
	if d.err != nil {
		return lists{offs: []uint32{0}}
	}
	return l
}

func (d *decoder) table() []string {
	n := d.count()
	out := make([]string, 0, n)
	for range n {
		out = append(out, d.str())
	}
	return out
}

func (d *decoder) pick(t []string) string {
	i := d.uint()
	if i >= uint64(len(t)) {
		d.fail("bad table index")
		return ""
	}
	return t[i]
}
