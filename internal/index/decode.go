package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"unsafe"

	"github.com/askrepo/askrepo/internal/symbols"
)

// decode reads the header, meta, files and trigram table of data, checking
// each one's checksum, and leaves the rest for first use (see whole).
func decode(data []byte) (*Index, error) {
	secs, err := sections(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	for _, i := range []int{secMeta, secFiles, secKeys, secTextSums} {
		if crc32.ChecksumIEEE(secs[i].b) != secs[i].sum {
			return nil, fmt.Errorf("%w: checksum mismatch (damaged)", ErrFormat)
		}
	}
	ix := &Index{diskBytes: atomicInt(int64(len(data))), lazy: &lazy{}}
	r := &rest{names: secs[secNames], symbols: secs[secSymbols]}
	d := decoder{b: secs[secMeta].b}
	ix.commit, ix.note, ix.wall = d.str(), d.str(), d.str()
	nfiles := d.uint()
	r.nsyms, r.nnames, r.nOccs = d.uint(), d.uint(), d.uint()
	d.end()
	f := decoder{b: secs[secFiles].b, err: d.err}
	if f.err == nil && nfiles > uint64(len(f.b)) {
		f.fail("more files than bytes")
	}
	if nsyms := f.files(ix, int(nfiles)); f.err == nil && uint64(nsyms) != r.nsyms {
		f.fail("the files' symbols do not add up")
	}
	f.end()
	if f.err == nil {
		f.err = ix.gramTable(secs)
	}
	if f.err == nil {
		f.err = ix.textTable(secs)
	}
	if f.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, f.err)
	}
	ix.rest = r
	ix.deriveFiles()
	return ix, nil
}

// section is one section of the file and its checksum.
type section struct {
	b   []byte
	sum uint32
}

// sections checks the header and cuts data into its sections.
func sections(data []byte) ([nSections]section, error) {
	var secs [nSections]section
	if len(data) < headerLen || string(data[:len(magic)]) != magic {
		return secs, errors.New("no code index header")
	}
	if v := data[len(magic)]; v != formatVersion {
		return secs, fmt.Errorf("format version %d, this program reads %d", v, formatVersion)
	}
	if crc32.ChecksumIEEE(data[:headerLen-4]) != binary.LittleEndian.Uint32(data[headerLen-4:]) {
		return secs, errors.New("header checksum mismatch (damaged)")
	}
	for i := range secs {
		ent := data[tocAt+i*tocEntry:]
		off, n := binary.LittleEndian.Uint64(ent), binary.LittleEndian.Uint64(ent[8:])
		if off < uint64(headerLen) || off%8 != 0 || off > uint64(len(data)) || n > uint64(len(data))-off {
			return secs, errors.New("a section past the end (truncated)")
		}
		secs[i] = section{b: data[off : off+n : off+n], sum: binary.LittleEndian.Uint32(ent[16:])}
	}
	return secs, nil
}

// gramTable takes the trigram keys, list offsets and sums as they lie in
// the file (see u32s), checking the keys' order.
func (ix *Index) gramTable(secs [nSections]section) error {
	keys, offs, sums := secs[secKeys].b, secs[secOffs].b, secs[secSums].b
	n := len(keys) / 4
	if len(keys)%4 != 0 || len(sums) != len(keys) || len(offs) != len(keys)+4 {
		return errors.New("trigram table sizes do not agree")
	}
	ix.gramKeys, ix.gramSums = u32s(keys), u32s(sums)
	ix.grams = lists{offs: u32s(offs), data: secs[secLists].b}
	for i := 1; i < n; i++ {
		if ix.gramKeys[i] <= ix.gramKeys[i-1] {
			return errors.New("trigram keys out of order")
		}
	}
	if n > 0 && ix.gramKeys[n-1] >= 1<<24 {
		return errors.New("trigram key out of range")
	}
	return nil
}

// textTable takes the files' text where it lies in the file, and their
// sums; each file's sum is checked when its text is first read.
func (ix *Index) textTable(secs [nSections]section) error {
	sums := secs[secTextSums].b
	if len(sums) != 4*len(ix.files) {
		return errors.New("text sums do not match the files")
	}
	t, err := newText(ix.files, secs[secText].b, u32s(sums), nil)
	if err != nil {
		return err
	}
	ix.text = t
	return nil
}

// u32s is b as little-endian uint32s: b itself where the machine is
// little-endian and b is aligned (the sections start at multiples of 8 of
// a page-aligned mapping), a copy otherwise.
func u32s(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	p := unsafe.SliceData(b)
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 && uintptr(unsafe.Pointer(p))%4 == 0 {
		return unsafe.Slice((*uint32)(unsafe.Pointer(p)), len(b)/4)
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// files reads the file table and returns how many symbols it names.
func (d *decoder) files(ix *Index, nfiles int) int64 {
	if d.err != nil {
		return 0
	}
	ix.files = make([]fileEntry, 0, nfiles)
	prev := ""
	var nsyms int64
	for range nfiles {
		p := d.frontCoded(prev)
		prev = p
		size := int64(d.uint()) + minSize
		nu := d.uint() // symbols live in their own section: bounded below
		refs := d.uint()
		n := int64(min(nu, 1<<31))
		if d.err == nil && (p == "" || size < minSize || refs >= 1<<31 || nsyms+n >= 1<<31) {
			d.fail("bad file entry")
		}
		if d.err != nil {
			return 0
		}
		ix.files = append(ix.files, fileEntry{path: p, size: size, symStart: int32(nsyms), symEnd: int32(nsyms + n), refs: int32(refs)})
		nsyms += n
	}
	return nsyms
}

// decodeRest decodes the names and symbols of a loaded index, after
// checking their checksums, into a copy of ix that holds everything.
func (ix *Index) decodeRest() (*Index, error) {
	r := ix.rest
	for _, s := range []section{r.names, r.symbols} {
		if crc32.ChecksumIEEE(s.b) != s.sum {
			return nil, errors.New("checksum mismatch (damaged)")
		}
	}
	w := *ix
	w.rest, w.ws, w.lazy = nil, nil, &lazy{}
	d := decoder{b: r.names.b}
	if d.err == nil && r.nnames > uint64(len(d.b)) {
		d.fail("more names than bytes")
	}
	d.names(&w, int(r.nnames))
	w.nOccs = int(min(r.nOccs, 1<<40))
	d.end()
	d.b = r.symbols.b
	d.symbols(&w, int64(r.nsyms))
	d.end()
	if d.err != nil {
		return nil, d.err
	}
	w.deriveSymbols()
	return &w, nil
}

func (d *decoder) names(ix *Index, nnames int) {
	if d.err != nil {
		return
	}
	ix.names = make([]string, 0, nnames)
	prev := ""
	for i := range nnames {
		n := d.frontCoded(prev)
		if i > 0 && n <= prev {
			d.fail("names out of order")
		}
		if d.err != nil {
			return
		}
		prev = n
		ix.names = append(ix.names, n)
	}
	ix.occs = d.lists(nnames)
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
	var lines lineStarts
	for id, f := range ix.files {
		if f.symEnd == f.symStart {
			continue
		}
		// The places point into the file's text: it must hold.
		text, ok := ix.text.checkedOf(id)
		if !ok {
			d.fail("the text of a file with symbols is damaged")
			return
		}
		lines.reset(text)
		for range f.symEnd - f.symStart {
			if d.err != nil {
				return
			}
			s := symbols.Symbol{Name: d.str()}
			s.Kind = d.pick(kinds)
			s.Lang = d.pick(langs)
			s.Container = d.str()
			s.Line = int(d.uint())
			s.EndLine = s.Line + int(d.uint())
			flags := d.byte()
			s.Exported, s.Test, s.Generated = flags&1 != 0, flags&2 != 0, flags&4 != 0
			s.Signature = d.place(&lines, s.Line)
			s.Doc = d.place(&lines, s.Line)
			ix.syms = append(ix.syms, s)
		}
	}
	if d.err == nil && int64(len(ix.syms)) != nsyms {
		d.fail("the symbols do not add up")
	}
}

// place reads what encoder.place wrote.
func (d *decoder) place(lines *lineStarts, line int) string {
	k := d.uint()
	if k == 0 {
		return d.str()
	}
	n := d.uint()
	if d.err != nil {
		return ""
	}
	s, ok := lines.at(line, unzigzag(k-1), n)
	if !ok {
		d.fail("a place past its file's text")
	}
	return s
}

// decoder reads the body; the first problem sticks and every later read
// returns zero values.
type decoder struct {
	b   []byte
	err error
}

// end fails unless every byte was read.
func (d *decoder) end() {
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
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
	// A copy, so the occurrences stay with the index whatever becomes of
	// the file's mapping.
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
