package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
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
//	meta    commit, note, wall (see wallKey), and the counts of files, symbols, names and occurrences
//	files   paths front-coded, with size, symbol count and reference count
//	keys    the trigrams, sorted, 4 bytes each (little-endian)
//	offs    where each trigram's posting list starts and the last ends, 4 bytes each
//	sums    each list's CRC-32 (of its key and its bytes), 4 bytes each
//	lists   the posting lists
//	names   identifier names front-coded, then their occurrence lists
//	symbols kind and language tables, then each symbol, its signature and
//	        doc line as places in its file's text where they are found there
//	tsums   the CRC-32 of each file's text, 4 bytes each, by file id
//	text    every file's text, in file id order
//
// Nothing is trusted before its checksum is checked: the header, meta,
// files and keys at Load; a posting list when a query reads it (a list
// that fails is not used: the search reads every file, as it does
// without an index); names and symbols when first decoded (when they fail,
// the index answers no symbols and its Note says it is damaged); a file's
// text when first read (one that fails is read from the checkout).
// Verify checks everything at once. Reads are bounds-checked throughout, so
// another version or a damaged file is an error, never a panic or a huge
// allocation.

const (
	magic = "askrepo code index\n"
	// formatVersion changes whenever the layout or meaning does.
	formatVersion = 5
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
	secTextSums
	secText
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
// valid. The text is written from where the index holds it, never copied
// into the heap.
func (ix *Index) Save(path string) error {
	secs, err := ix.sections()
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
	w := bufio.NewWriterSize(tmp, 1<<20)
	n, err := writeLayout(w, secs)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err != nil {
		tmp.Close()
		return fmt.Errorf("save index: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save index: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save index: %w", err)
	}
	ix.diskBytes.Store(n)
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

// sections is the saved form of ix, section by section; the text is the
// index's own.
func (ix *Index) sections() ([nSections][]byte, error) {
	w := ix.whole()
	if err := ix.damage(); err != nil {
		return [nSections][]byte{}, err
	}
	return w.encodeWhole(), nil
}

func (ix *Index) encodeWhole() [nSections][]byte {
	var secs [nSections][]byte
	var e encoder
	e.str(ix.commit)
	e.str(ix.note)
	e.str(ix.wall)
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
	var tsums []byte
	if ix.text != nil {
		tsums = make([]byte, 0, 4*len(ix.text.sums))
		for _, s := range ix.text.sums {
			tsums = binary.LittleEndian.AppendUint32(tsums, s)
		}
		secs[secText] = ix.text.data
	}
	secs[secTextSums] = tsums
	return secs
}

// writeLayout writes the header and the sections after it to w, and
// returns how many bytes that is.
func writeLayout(w io.Writer, secs [nSections][]byte) (int64, error) {
	hdr := make([]byte, headerLen)
	copy(hdr, magic)
	hdr[len(magic)] = formatVersion
	off := int64(headerLen)
	for i, s := range secs {
		off = (off + 7) &^ 7
		ent := hdr[tocAt+i*tocEntry:]
		binary.LittleEndian.PutUint64(ent, uint64(off))
		binary.LittleEndian.PutUint64(ent[8:], uint64(len(s)))
		binary.LittleEndian.PutUint32(ent[16:], crc32.ChecksumIEEE(s))
		off += int64(len(s))
	}
	binary.LittleEndian.PutUint32(hdr[headerLen-4:], crc32.ChecksumIEEE(hdr[:headerLen-4]))
	if _, err := w.Write(hdr); err != nil {
		return 0, err
	}
	var zeros [8]byte
	at := int64(headerLen)
	for _, s := range secs {
		if pad := (at+7)&^7 - at; pad > 0 {
			if _, err := w.Write(zeros[:pad]); err != nil {
				return 0, err
			}
			at += pad
		}
		if _, err := w.Write(s); err != nil {
			return 0, err
		}
		at += int64(len(s))
	}
	return at, nil
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
	var lines lineStarts
	for id, f := range ix.files {
		lines.reset(ix.text.of(id))
		for i := f.symStart; i < f.symEnd && int(i) < len(ix.syms); i++ {
			s := ix.syms[i]
			e.str(s.Name)
			e.uint(uint64(kinds.idx[s.Kind]))
			e.uint(uint64(langs.idx[s.Lang]))
			e.str(s.Container)
			e.uint(uint64(s.Line))
			e.uint(uint64(max(s.EndLine-s.Line, 0)))
			e.b = append(e.b, flagsOf(s))
			e.place(&lines, s.Line, s.Signature)
			e.place(&lines, s.Line, s.Doc)
		}
	}
}

// place writes s, a symbol's signature or doc line, as where it is in its
// file's text, near line: 0 when it is not found there and s follows as
// it is, else 1 + the zigzag distance of its start from line's start, and
// its length. Signatures are the symbol's line, doc lines a few lines
// above: most take three bytes instead of their length.
func (e *encoder) place(lines *lineStarts, line int, s string) {
	if at, ok := lines.find(line, s); ok {
		e.uint(1 + zigzag(at))
		e.uint(uint64(len(s)))
		return
	}
	e.uint(0)
	e.str(s)
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// placeWindow is how far above a symbol's line its doc line is looked for.
const placeWindow = 1 << 10

// lineStarts finds lines in one file's text, working out where they
// start the first time it is asked.
type lineStarts struct {
	text   []byte
	starts []int // nil until asked
}

func (l *lineStarts) reset(text []byte) {
	l.text = text
	l.starts = l.starts[:0]
}

// span returns where line (1-based) starts and ends in the text.
func (l *lineStarts) span(line int) (start, end int, ok bool) {
	if len(l.starts) == 0 {
		l.starts = append(l.starts, 0)
		for i := 0; ; {
			j := bytes.IndexByte(l.text[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			l.starts = append(l.starts, i)
		}
	}
	if line < 1 || line > len(l.starts) {
		return 0, 0, false
	}
	start, end = l.starts[line-1], len(l.text)
	if line < len(l.starts) {
		end = l.starts[line]
	}
	return start, end, true
}

// find returns where s is: on line, else closest above it within
// placeWindow bytes, as its distance from line's start.
func (l *lineStarts) find(line int, s string) (int64, bool) {
	if s == "" || len(l.text) == 0 {
		return 0, false
	}
	start, end, ok := l.span(line)
	if !ok {
		return 0, false
	}
	if i := bytes.Index(l.text[start:end], []byte(s)); i >= 0 {
		return int64(i), true
	}
	from := max(0, start-placeWindow)
	if i := bytes.LastIndex(l.text[from:min(end, start+len(s)-1)], []byte(s)); i >= 0 {
		return int64(from + i - start), true
	}
	return 0, false
}

// at returns the text a place read back names: off from line's start,
// n bytes long.
func (l *lineStarts) at(line int, off int64, n uint64) (string, bool) {
	start, _, ok := l.span(line)
	if !ok {
		return "", false
	}
	from := int64(start) + off
	if from < 0 || from > int64(len(l.text)) || n > uint64(int64(len(l.text))-from) {
		return "", false
	}
	return string(l.text[from : from+int64(n)]), true
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
