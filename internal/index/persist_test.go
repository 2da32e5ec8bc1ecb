package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSaveLoad(t *testing.T) {
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	path := filepath.Join(t.TempDir(), "index")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encoded(t, got), encoded(t, ix)) {
		t.Error("the loaded index encodes differently from the saved one")
	}
	if s := got.Stats(); s.DiskBytes != fi.Size() || ix.Stats().DiskBytes != fi.Size() {
		t.Errorf("DiskBytes %d (loaded) and %d (saved), want %d", s.DiskBytes, ix.Stats().DiskBytes, fi.Size())
	}
	if diff := cmp.Diff(ix.Stats(), got.Stats()); diff != "" {
		t.Errorf("Stats (-saved +loaded):\n%s", diff)
	}
	if diff := cmp.Diff(ix.Definitions("Client.Do", false), got.Definitions("Client.Do", false)); diff != "" {
		t.Errorf("Definitions (-saved +loaded):\n%s", diff)
	}
	if diff := cmp.Diff(ix.Files(), got.Files()); diff != "" {
		t.Errorf("Files (-saved +loaded):\n%s", diff)
	}
	a, _ := ix.Candidates([]string{"Client"}, true)
	b, _ := got.Candidates([]string{"Client"}, true)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("Candidates (-saved +loaded):\n%s", diff)
	}
	// Loaded, it has no workspace to read lines through until given one.
	refs := got.References("Client")
	if len(refs) != 4 || refs[0].Text != "" {
		t.Errorf("References after Load = %+v, want 4 without text", refs)
	}
	if diff := cmp.Diff(ix.References("Client"), got.WithWorkspace(ws).References("Client")); diff != "" {
		t.Errorf("References with the workspace (-saved +loaded):\n%s", diff)
	}
	checkWall(t, got)
	// No temporary file is left beside it.
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("%d files in the directory, want only the index", len(entries))
	}
}

// encoded is ix's saved form.
func encoded(t testing.TB, ix *Index) []byte {
	t.Helper()
	b, err := ix.encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// savedAndLoaded is an index built of the wall's repository, and the
// same saved and loaded again.
func savedAndLoaded(t *testing.T) (built, loaded *Index) {
	t.Helper()
	ws, head := wallRepo(t)
	ix := build(t, ws, head, Options{})
	return ix, saveAndLoad(t, ix)
}

// saveAndLoad saves ix and loads it again.
func saveAndLoad(t *testing.T, ix *Index) *Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An intact saved index passes Verify and says nothing of damage.
func TestLoadedIndexIsVerified(t *testing.T) {
	ix, got := savedAndLoaded(t)
	if err := got.Verify(); err != nil {
		t.Errorf("Verify of an intact index: %v", err)
	}
	if got.Note() != ix.Note() {
		t.Errorf("Note %q, want %q", got.Note(), ix.Note())
	}
}

// sectionAt returns the bounds of section i of a saved index.
func sectionAt(t testing.TB, data []byte, i int) (from, to int) {
	t.Helper()
	ent := data[tocAt+i*tocEntry:]
	off, n := binary.LittleEndian.Uint64(ent), binary.LittleEndian.Uint64(ent[8:])
	return int(off), int(off + n)
}

// TestLoadRefuses: what Load checks (the header, meta, files and
// trigram keys) it refuses when damaged; what it leaves for later (the
// posting lists, names and symbols) is never used damaged: a search
// through a damaged list is not narrowed, damaged symbols are not
// answered, and Verify and Save say so.
func TestLoadRefuses(t *testing.T) {
	ws, head := wallRepo(t)
	good := encoded(t, build(t, ws, head, Options{}))
	flipIn := func(sec int) []byte {
		b := bytes.Clone(good)
		if sec < 0 {
			b[tocAt+3] ^= 0x40
			return b
		}
		from, to := sectionAt(t, good, sec)
		b[(from+to)/2] ^= 0x40
		return b
	}
	otherVersion := bytes.Clone(good)
	otherVersion[len(magic)] = formatVersion + 1
	hugeCount := bytes.Clone(good)
	binary.LittleEndian.PutUint64(hugeCount[tocAt+secSymbols*tocEntry+8:], 1<<62)
	for name, data := range map[string][]byte{
		"empty":                 nil,
		"not an index":          []byte("hello world, this is not it"),
		"version 2":             append([]byte(magic), 2, 0, 0, 0, 0),
		"other version":         resum(otherVersion),
		"truncated":             good[:len(good)/2],
		"truncated header":      good[:headerLen-1],
		"flipped header":        flipIn(-1),
		"flipped meta":          flipIn(secMeta),
		"flipped files":         flipIn(secFiles),
		"flipped keys":          flipIn(secKeys),
		"huge section, resumed": resum(hugeCount),
		"huge file count":       withMeta(good, 1<<40),
		"huge symbol count":     withMeta(good, 0),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := loadBytes(t, data); !errors.Is(err, ErrFormat) {
				t.Errorf("Load = %v, want ErrFormat", err)
			}
		})
	}
	for _, sec := range []int{secOffs, secSums, secLists} {
		ix, err := loadBytes(t, flipIn(sec))
		if err != nil {
			t.Fatalf("section %d: %v", sec, err)
		}
		if err := ix.Verify(); !errors.Is(err, ErrFormat) {
			t.Errorf("section %d flipped: Verify = %v, want ErrFormat", sec, err)
		}
		exercise(ix)
		if n := damagedLists(ix); n == 0 {
			t.Errorf("section %d flipped: every list is used", sec)
		}
	}
	for _, sec := range []int{secNames, secSymbols} {
		ix, err := loadBytes(t, flipIn(sec))
		if err != nil {
			t.Fatalf("section %d: %v", sec, err)
		}
		if got := ix.Definitions("Client", false); len(got) != 0 {
			t.Errorf("section %d flipped: Definitions = %v, want none", sec, got)
		}
		if !strings.Contains(ix.Note(), "damaged") {
			t.Errorf("section %d flipped: Note %q does not say so", sec, ix.Note())
		}
		if err := ix.Verify(); !errors.Is(err, ErrFormat) {
			t.Errorf("section %d flipped: Verify = %v, want ErrFormat", sec, err)
		}
		if _, err := ix.encode(); !errors.Is(err, ErrFormat) {
			t.Errorf("section %d flipped: encode = %v, want ErrFormat", sec, err)
		}
		if _, err := Update(t.Context(), ix, ws, head, nil, Options{}); !errors.Is(err, ErrFormat) {
			t.Errorf("section %d flipped: Update = %v, want ErrFormat", sec, err)
		}
		exercise(ix)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil || errors.Is(err, ErrFormat) {
		t.Errorf("Load of a missing file = %v, want a plain I/O error", err)
	}
}

// damagedLists counts the trigrams whose lists a query will not use.
func damagedLists(ix *Index) int {
	n := 0
	for i := range ix.gramKeys {
		if _, ok := ix.gramList(i); !ok {
			n++
		}
	}
	return n
}

// withMeta is data with its meta section saying nfiles files, every
// checksum right.
func withMeta(data []byte, nfiles uint64) []byte {
	ix, err := decode(data)
	if err != nil {
		panic(err)
	}
	secs, _ := sections(data)
	var parts [nSections][]byte
	for i, s := range secs {
		parts[i] = s.b
	}
	var e encoder
	e.str(ix.commit)
	e.str(ix.note)
	e.str(ix.wall)
	e.uint(nfiles)
	e.uint(ix.rest.nsyms)
	e.uint(ix.rest.nnames)
	e.uint(ix.rest.nOccs)
	parts[secMeta] = e.b
	return layout(parts)
}

func loadBytes(t testing.TB, data []byte) (*Index, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(path)
}

// exercise runs every query on ix.
func exercise(ix *Index) {
	ix.Candidates([]string{"Client", "func"}, true)
	for _, n := range ix.SymbolNames() {
		ix.Definitions(n, false)
		ix.Definitions(n, true)
	}
	for _, n := range ix.whole().names {
		ix.References(n)
	}
	ix.Files()
	ix.Stats()
	ix.Paths()
	ix.Unindexed()
	ix.Verify()
}

// FuzzLoad: no file makes Load panic or answer queries with a panic.
// Each input is tried as it is and with its checksums fixed, so the
// mutations reach the decoder behind them.
func FuzzLoad(f *testing.F) {
	ws, head := wallRepo(f)
	good := encoded(f, build(f, ws, head, Options{}))
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, b := range [][]byte{data, resum(data)} {
			if ix, err := decode(b); err == nil {
				exercise(ix)
			}
		}
	})
}

// resum fixes every checksum of b that it can find: each section's, as
// far as the table of contents names one inside b, then the header's.
func resum(b []byte) []byte {
	if len(b) < headerLen {
		return b
	}
	b = bytes.Clone(b)
	for i := range nSections {
		ent := b[tocAt+i*tocEntry:]
		off, n := binary.LittleEndian.Uint64(ent), binary.LittleEndian.Uint64(ent[8:])
		if off <= uint64(len(b)) && n <= uint64(len(b))-off {
			binary.LittleEndian.PutUint32(ent[16:], crc32.ChecksumIEEE(b[off:off+n]))
		}
	}
	binary.LittleEndian.PutUint32(b[headerLen-4:], crc32.ChecksumIEEE(b[:headerLen-4]))
	return b
}

// A loaded index answers a search, its file list and its counts from the
// sections Load read, decoding no identifier or symbol until a tool asks
// for one.
func TestLoadLeavesSymbolsUntilAsked(t *testing.T) {
	ix, got := savedAndLoaded(t)
	cands, ok := got.Candidates([]string{"Client"}, false)
	if want, _ := ix.Candidates([]string{"Client"}, false); !ok || !slices.Equal(cands, want) {
		t.Errorf("Candidates = %q, %v; want %q", cands, ok, want)
	}
	if got.FileCount() != len(ix.Files()) || !slices.Equal(got.Paths(), ix.Paths()) {
		t.Errorf("FileCount %d, Paths %q; want %d, %q", got.FileCount(), got.Paths(), len(ix.Files()), ix.Paths())
	}
	got.Unindexed()
	if diff := cmp.Diff(ix.Stats(), got.Stats()); diff != "" {
		t.Errorf("Stats (-built +loaded):\n%s", diff)
	}
	if got.rest.whole != nil {
		t.Error("the symbols were decoded for a search")
	}
	if len(got.Definitions("Client", false)) == 0 || got.rest.whole == nil {
		t.Error("Definitions did not decode the symbols")
	}
}

// The service's Indexer checks a saved index whole when it loads it, so
// one damaged where Load does not look is refused (and built again by
// the caller); a one-call process's leaves that to first use.
func TestIndexerCheckOnLoad(t *testing.T) {
	ws, head := wallRepo(t)
	data := encoded(t, build(t, ws, head, Options{}))
	from, to := sectionAt(t, data, secSymbols)
	data[(from+to)/2] ^= 0x40
	path := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Indexer{CheckOnLoad: true}).Load(t.Context(), path, ws); !errors.Is(err, ErrFormat) {
		t.Errorf("CheckOnLoad: Load = %v, want ErrFormat", err)
	}
	idx, err := (Indexer{}).Load(t.Context(), path, ws)
	if err != nil {
		t.Fatalf("without CheckOnLoad: %v", err)
	}
	if got := idx.Definitions("Client", false); len(got) != 0 || !strings.Contains(idx.Note(), "damaged") {
		t.Errorf("damaged symbols answered %v, note %q", got, idx.Note())
	}
}
