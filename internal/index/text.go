package index

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// The index keeps the text of every file it indexed, as read through the
// wall when it was built, back to back in file id order. A search that
// the trigrams narrowed to a thousand files then reads them from one
// mapping instead of opening each through the wall: on Go's src/, a
// pattern whose literal is in 1,086 files spent two thirds of its time in
// open and read. The text also lets the saved symbols point into it for
// their signatures and doc lines instead of repeating them (see
// encodeSymbols), which pays for much of its room on disk.
//
// A built index writes the text to a spill file as files are added, in
// the directory Options.TempDir names, unlinked at once, and maps it when
// the build ends, so neither a build nor the index after it holds the
// text in the heap; a loaded index reads it where it lies in the saved
// file. Each file's text has a CRC-32, checked the first time it is read
// (Verify checks them all), so a damaged file is read from the checkout
// instead, never searched as it is.

// text is the text of an index's files.
type text struct {
	data []byte   // every file's text, in file id order
	offs []int64  // file id's text is data[offs[id]:offs[id+1]]
	sums []uint32 // the CRC-32 of each file's text, by file id
	// checked says, by file id, whether the sum was checked: 1 it held,
	// 2 it failed. Shared by the copies of an index.
	checked []atomic.Uint32
	hold    *mapping // a built index's spill file
}

// newText cuts data into the texts of files (their sizes say how long
// each is) with the given sums, checking that they add up.
func newText(files []fileEntry, data []byte, sums []uint32, hold *mapping) (*text, error) {
	if len(sums) != len(files) {
		return nil, errors.New("text sums do not match the files")
	}
	t := &text{data: data, sums: sums, offs: make([]int64, len(files)+1), checked: make([]atomic.Uint32, len(files)), hold: hold}
	var off int64
	for id, f := range files {
		t.offs[id] = off
		if f.size > int64(len(data))-off {
			// Checked one by one, so no sum of sizes can wrap around.
			return nil, fmt.Errorf("the files' text sizes add up to more than the text's %d bytes", len(data))
		}
		if f.size > 0 {
			off += f.size
		}
	}
	t.offs[len(files)] = off
	if off != int64(len(data)) {
		return nil, fmt.Errorf("the files' text sizes add up to %d bytes, the text is %d", off, len(data))
	}
	return t, nil
}

// of returns file id's text unchecked: for a built index, or one whose
// text was verified.
func (t *text) of(id int) []byte {
	if t == nil || id < 0 || id+1 >= len(t.offs) {
		return nil
	}
	// Capped at its end: an append to one file's text must never run on
	// into the next file's (on a mapping it would fault; where the text is
	// read into memory, it would silently change what the next search
	// reads).
	return t.data[t.offs[id]:t.offs[id+1]:t.offs[id+1]]
}

// checkedOf returns file id's text once its sum holds, checking it the
// first time; false when it fails.
func (t *text) checkedOf(id int) ([]byte, bool) {
	b := t.of(id)
	switch t.checked[id].Load() {
	case 1:
		return b, true
	case 2:
		return nil, false
	}
	if crc32.ChecksumIEEE(b) != t.sums[id] {
		t.checked[id].Store(2)
		return nil, false
	}
	t.checked[id].Store(1)
	return b, true
}

// verify checks every file's sum; the first that fails is an error.
func (t *text) verify() error {
	if t == nil {
		return nil
	}
	for id := range t.sums {
		if _, ok := t.checkedOf(id); !ok {
			return fmt.Errorf("%w: the text of file %d: checksum mismatch (damaged)", ErrFormat, id)
		}
	}
	return nil
}

// Text returns the text the index holds of path, as it was read through
// the wall when the index was built, or false when it holds none: a file
// it does not list, a binary, too large or unreadable one, or one whose
// saved text is damaged (then the caller reads the file itself). The
// bytes are the index's own, shared and read-only, and stay valid as long
// as the index is reachable.
func (ix *Index) Text(path string) ([]byte, bool) {
	if ix.text == nil {
		return nil, false
	}
	id, found := slices.BinarySearchFunc(ix.files, path, func(f fileEntry, p string) int { return strings.Compare(f.path, p) })
	if !found || ix.files[id].size < 0 {
		return nil, false
	}
	return ix.text.checkedOf(id)
}

// spill writes the files' text of a build to an unlinked temporary file,
// in file id order, and maps it when done.
type spill struct {
	f    *os.File
	w    *bufio.Writer
	sums []uint32
	n    int64
	err  error
}

func newSpill(dir string) (*spill, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("index: a file for the text: %w", err)
	}
	f, err := os.CreateTemp(dir, ".codeindex-text-*")
	if err != nil {
		return nil, fmt.Errorf("index: a file for the text: %w", err)
	}
	// Unlinked at once where the system allows it (unix), so a crash
	// leaves nothing behind; elsewhere when it has been read.
	os.Remove(f.Name())
	return &spill{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// add appends the text of the next file (nil for a file with none).
func (s *spill) add(b []byte) {
	if b == nil {
		s.sums = append(s.sums, 0)
		return
	}
	s.sums = append(s.sums, crc32.ChecksumIEEE(b))
	if s.err == nil {
		_, s.err = s.w.Write(b)
	}
	s.n += int64(len(b))
}

// finish maps what was written as the text of files.
func (s *spill) finish(files []fileEntry) (*text, error) {
	defer s.close()
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err != nil {
		return nil, fmt.Errorf("index: write the text: %w", s.err)
	}
	m, err := mapOpen(s.f, s.n)
	if err != nil {
		return nil, fmt.Errorf("index: map the text: %w", err)
	}
	t, err := newText(files, m.data, s.sums, m)
	if err != nil {
		m.close()
		return nil, fmt.Errorf("index: %w", err)
	}
	return t, nil
}

// close drops the file (its mapping, if any, stays).
func (s *spill) close() {
	if s.f != nil {
		s.f.Close()
		os.Remove(s.f.Name())
		s.f = nil
	}
}
