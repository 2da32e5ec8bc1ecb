package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
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
	if !bytes.Equal(got.encode(), ix.encode()) {
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

func TestLoadRefuses(t *testing.T) {
	ws, head := wallRepo(t)
	good := build(t, ws, head, Options{}).encode()
	otherVersion := bytes.Clone(good)
	otherVersion[len(magic)] = formatVersion + 1
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x40
	for name, data := range map[string][]byte{
		"empty":             nil,
		"not an index":      []byte("hello world, this is not it"),
		"other version":     resum(otherVersion),
		"truncated":         good[:len(good)/2],
		"flipped byte":      flipped,
		"flipped, resummed": resum(flipped),
		"trailing":          resum(append(bytes.Clone(good[:len(good)-4]), 0, 0, 0, 0, 0)),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "index")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			ix, err := Load(path)
			if name == "flipped, resummed" && err == nil {
				// A flip inside a string or list may still decode; it must
				// at least answer without panicking.
				exercise(ix)
				return
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("Load = %v, want ErrFormat", err)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil || errors.Is(err, ErrFormat) {
		t.Errorf("Load of a missing file = %v, want a plain I/O error", err)
	}
}

// exercise runs every query on ix.
func exercise(ix *Index) {
	ix.Candidates([]string{"Client", "func"}, true)
	for _, n := range ix.SymbolNames() {
		ix.Definitions(n, false)
		ix.Definitions(n, true)
	}
	for _, n := range ix.names {
		ix.References(n)
	}
	ix.Files()
	ix.Stats()
}

// FuzzLoad: no file makes Load panic or answer queries with a panic.
// Each input is tried as it is and with its checksum fixed, so the
// mutations reach the decoder behind the checksum.
func FuzzLoad(f *testing.F) {
	ws, head := wallRepo(f)
	good := build(f, ws, head, Options{}).encode()
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

func resum(b []byte) []byte {
	if len(b) < 4 {
		return b
	}
	b = bytes.Clone(b[:len(b)-4])
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}
