package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/askrepo/askrepo/internal/symbols"
)

// The saved form is read in place: Load maps the file (see mapFile) and
// decodes only what every query needs, the file table, leaving the
// trigram table where it lies and the identifiers and symbols until a
// tool first asks for them. A search through a fresh process then pays
// for the bytes it touches, not for the 50 MB of an index of Go's src/.
//
// Layout: the magic line, the format version (one byte), zeros up to a
// multiple of 8, a table of contents (for each section its offset,
// length and CRC-32, 24 bytes), the CRC-32 of all of that, then the
// sections, each starting at a multiple of 8:
//
//	meta    commit, note, and the counts of files, symbols, names and occurrences
//	files   paths front-coded, with size, symbol count and reference count
//	keys    the trigrams, sorted, 4 bytes each (little-endian)
//	offs    where each trigram's posting list starts and the last ends, 4 bytes each
//	sums    each list's CRC-32 (of its key and its bytes), 4 bytes each
//	lists   the posting lists
//	names   identifier names front-coded, then their occurrence lists
//	symbols kind and language tables, then each symbol
//
// Nothing is trusted before its checksum is checked: the header, meta,
// files and keys at Load; a posting list when a query reads it (a list
// that fails is not used: the search reads every file, as it does
// without an index); names and symbols when first decoded (when they fail,
// the index answers no symbols and its Note says it is damaged). Verify
// checks everything at once. Reads are bounds-checked throughout, so
// another version or a damaged file is an error, never a panic or a huge
// allocation.

const (
	magic = "askrepo code index\n"
	// formatVersion changes whenever the layout or meaning does.
	formatVersion = 3
)

// The sections, in file order.
const (
	secMeta = iota
	secFiles
	secKeys
	secOffs
	secSums
	secLists
	secNames
	secSymbols
	nSections
)

// tocAt is where the table of contents starts; headerLen is the header's
// length, its checksum included.
const (
	tocAt     = (len(magic) + 1 + 7) &^ 7
	tocEntry  = 24
	headerLen = tocAt + nSections*tocEntry + 4
)

// ErrFormat is wrapped by Load's errors about the file's content: another
// format version, or a damaged file. The caller rebuilds the index.
var ErrFormat = errors.New("not a code index of this version")

// Save writes the index to path atomically (a temporary file in the same
// directory, renamed over path), readable only by its owner. A file once
// saved is never written again, only replaced, so a mapping of it stays
// valid.
func (ix *Index) Save(path string) error {
	data, err := ix.encode()
	if err != nil {
		return fmt.Errorf("save index: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".codeindex-*")
	if err != nil {
		return fmt.Errorf("save index: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("save index: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("save index: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save index: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save index: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save index: %w", err)
	}
	ix.diskBytes.Store(int64(len(data)))
	return nil
}

// Load opens an index Save wrote. It has no workspace: see WithWorkspace.
func Load(path string) (*Index, error) {
	m, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("load index: %w", err)
	}
	ix, err := decode(m.data)
	if err != nil {
		m.close()
		return nil, fmt.Errorf("load index %s: %w", path, err)
	}
	ix.hold = m
	return ix, nil
}

// encode is the saved form of ix; an index loaded damaged cannot be.
func (ix *Index) encode() ([]byte, error) {
	w := ix.whole()
	if err := ix.damage(); err != nil {
		return nil, err
	}
	return w.encodeWhole(), nil
}

func (ix *Index) encodeWhole() []byte {
	var secs [nSections][]byte
	var e encoder
	e.str(ix.commit)
	e.str(ix.note)
	e.uint(uint64(len(ix.files)))
	e.uint(uint64(len(ix.syms)))
	e.uint(uint64(len(ix.names)))
	e.uint(uint64(ix.nOccs))
	secs[secMeta] = e.take()
	prev := ""
	for _, f := range ix.files {
		e.frontCoded(prev, f.path)
		prev = f.path
		e.uint(uint64(f.size - minSize))
		e.uint(uint64(f.symEnd - f.symStart))
		e.uint(uint64(f.refs))
	}
	secs[secFiles] = e.take()
	var keys, offs, sums []byte
	for i, k := range ix.gramKeys {
		keys = binary.LittleEndian.AppendUint32(keys, k)
		offs = binary.LittleEndian.AppendUint32(offs, ix.grams.offs[i])
		sums = binary.LittleEndian.AppendUint32(sums, listSum(k, ix.grams.get(i)))
	}
	offs = binary.LittleEndian.AppendUint32(offs, uint32(len(ix.grams.data)))
	secs[secKeys], secs[secOffs], secs[secSums], secs[secLists] = keys, offs, sums, ix.grams.data
	prev = ""
	for _, n := range ix.names {
		e.frontCoded(prev, n)
		prev = n
	}
	e.lists(ix.occs)
	secs[secNames] = e.take()
	ix.encodeSymbols(&e)
	secs[secSymbols] = e.take()
	return layout(secs)
}

// layout writes the header and the sections after it.
func layout(secs [nSections][]byte) []byte {
	size := headerLen
	for _, s := range secs {
		size = (size+7)&^7 + len(s)
	}
	out := make([]byte, headerLen, size)
	copy(out, magic)
	out[len(magic)] = formatVersion
	for i, s := range secs {
		for len(out)%8 != 0 {
			out = append(out, 0)
		}
		ent := out[tocAt+i*tocEntry:]
		binary.LittleEndian.PutUint64(ent, uint64(len(out)))
		binary.LittleEndian.PutUint64(ent[8:], uint64(len(s)))
		binary.LittleEndian.PutUint32(ent[16:], crc32.ChecksumIEEE(s))
		out = append(out, s...)
	}
	binary.LittleEndian.PutUint32(out[headerLen-4:], crc32.ChecksumIEEE(out[:headerLen-4]))
	return out
}

// listSum is the checksum of one posting list, its key included, so a
// list cannot pass for another trigram's.
func listSum(key uint32, list []byte) uint32 {
	var k [4]byte
	binary.LittleEndian.PutUint32(k[:], key)
	return crc32.Update(crc32.ChecksumIEEE(k[:]), crc32.IEEETable, list)
}

func (ix *Index) encodeSymbols(e *encoder) {
	kinds, langs := table{}, table{}
	for _, s := range ix.syms {
		kinds.add(s.Kind)
		langs.add(s.Lang)
	}
	kinds.write(e)
	langs.write(e)
	for _, s := range ix.syms {
		e.str(s.Name)
		e.uint(uint64(kinds.idx[s.Kind]))
		e.uint(uint64(langs.idx[s.Lang]))
		e.str(s.Container)
		e.str(s.Signature)
		e.str(s.Doc)
		e.uint(uint64(s.Line))
		e.uint(uint64(max(s.EndLine-s.Line, 0)))
		e.b = append(e.b, flagsOf(s))
	}
}

func flagsOf(s symbols.Symbol) byte {
	var f byte
	if s.Exported {
		f |= 1
	}
	if s.Test {
		f |= 2
	}
	if s.Generated {
		f |= 4
	}
	return f
}

type encoder struct{ b []byte }

// take returns what was written and starts afresh.
func (e *encoder) take() []byte {
	b := e.b
	e.b = nil
	return b
}

func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

func (e *encoder) str(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// frontCoded writes s as the length it shares with prev and the rest.
func (e *encoder) frontCoded(prev, s string) {
	n := 0
	for n < len(prev) && n < len(s) && prev[n] == s[n] {
		n++
	}
	e.uint(uint64(n))
	e.str(s[n:])
}

func (e *encoder) lists(l lists) {
	for i := range l.len() {
		e.uint(uint64(len(l.get(i))))
	}
	e.uint(uint64(len(l.data)))
	e.b = append(e.b, l.data...)
}

// table numbers a few distinct strings in order of first use.
type table struct {
	idx  map[string]int
	list []string
}

func (t *table) add(s string) {
	if t.idx == nil {
		t.idx = map[string]int{}
	}
	if _, ok := t.idx[s]; !ok {
		t.idx[s] = len(t.list)
		t.list = append(t.list, s)
	}
}

func (t *table) write(e *encoder) {
	e.uint(uint64(len(t.list)))
	for _, s := range t.list {
		e.str(s)
	}
}
