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

// The saved form: a magic line, a format version, the body, and a CRC-32
// of all before it. The body holds what Build made and nothing derived:
// files (paths front-coded), trigram keys and lists, identifier names and
// occurrence lists, and the symbols (paths implied by their files, kinds
// and languages as indices into small tables). Load checks the magic, the
// version and the checksum before reading, and reads with bounds checks
// throughout, so another version or a damaged file is an error, never a
// panic or a huge allocation.

const (
	magic = "askrepo code index\n"
	// formatVersion changes whenever the body's layout or meaning does.
	formatVersion = 2
)

// ErrFormat is wrapped by Load's errors about the file's content: another
// format version, or a damaged file. The caller rebuilds the index.
var ErrFormat = errors.New("not a code index of this version")

// Save writes the index to path atomically (a temporary file in the same
// directory, renamed over path), readable only by its owner.
func (ix *Index) Save(path string) error {
	data := ix.encode()
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

// Load reads an index Save wrote. It has no workspace: see WithWorkspace.
func Load(path string) (*Index, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load index: %w", err)
	}
	ix, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("load index %s: %w", path, err)
	}
	return ix, nil
}

func (ix *Index) encode() []byte {
	e := encoder{b: make([]byte, 0, len(ix.grams.data)+len(ix.occs.data)+64*len(ix.syms)+32*len(ix.files)+1024)}
	e.b = append(e.b, magic...)
	e.uint(formatVersion)
	e.str(ix.commit)
	e.str(ix.note)
	e.uint(uint64(len(ix.files)))
	prev := ""
	for _, f := range ix.files {
		e.frontCoded(prev, f.path)
		prev = f.path
		e.uint(uint64(f.size - minSize))
		e.uint(uint64(f.symEnd - f.symStart))
		e.uint(uint64(f.refs))
	}
	e.uint(uint64(len(ix.gramKeys)))
	var last uint32
	for _, k := range ix.gramKeys {
		e.uint(uint64(k - last))
		last = k
	}
	e.lists(ix.grams)
	e.uint(uint64(len(ix.names)))
	prev = ""
	for _, n := range ix.names {
		e.frontCoded(prev, n)
		prev = n
	}
	e.lists(ix.occs)
	e.uint(uint64(ix.nOccs))
	kinds, langs := table{}, table{}
	for _, s := range ix.syms {
		kinds.add(s.Kind)
		langs.add(s.Lang)
	}
	kinds.write(&e)
	langs.write(&e)
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
	return binary.LittleEndian.AppendUint32(e.b, crc32.ChecksumIEEE(e.b))
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
