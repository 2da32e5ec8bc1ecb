package index

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// rest is what a loaded index decodes on first use only: its identifiers
// and symbols, most of the file, which a search never needs.
type rest struct {
	names, symbols       section
	nsyms, nnames, nOccs uint64 // as the file's meta says, for Stats

	once    sync.Once
	whole   *Index // ix with everything decoded (no workspace)
	damaged atomic.Pointer[error]
}

// whole returns ix with its names and symbols decoded: ix itself when it
// was built, else (decoding them the first time) a copy reading through
// ix's workspace. When they are damaged it returns a copy with no names
// and no symbols, and damage says why.
func (ix *Index) whole() *Index {
	r := ix.rest
	if r == nil {
		return ix
	}
	r.once.Do(func() {
		w, err := ix.decodeRest()
		if err != nil {
			err = fmt.Errorf("%w: identifiers and symbols: %w", ErrFormat, err)
			r.damaged.Store(&err)
			w = ix.withoutSymbols()
		}
		r.whole = w
	})
	c := *r.whole
	c.ws = ix.ws
	return &c
}

// withoutSymbols is ix, loaded, with no symbols or names: what it answers
// when those are damaged.
func (ix *Index) withoutSymbols() *Index {
	w := *ix
	w.rest, w.ws, w.lazy = nil, nil, &lazy{}
	w.files = slices.Clone(ix.files)
	for i := range w.files {
		w.files[i].symStart, w.files[i].symEnd = 0, 0
	}
	w.nOccs = 0
	return &w
}

// damage is the error of a loaded index's names and symbols, once they
// were decoded and found damaged; nil otherwise.
func (ix *Index) damage() error {
	if ix.rest == nil {
		return nil
	}
	if err := ix.rest.damaged.Load(); err != nil {
		return *err
	}
	return nil
}

// Verify checks every checksum of a loaded index, posting lists included,
// and decodes its names and symbols: nil when all of it can be trusted.
// Load checks only what every query reads; the rest is checked when first
// used, and a search never uses a list that fails. A built index has
// nothing to check.
func (ix *Index) Verify() error {
	ix.whole()
	if err := ix.damage(); err != nil {
		return err
	}
	if err := ix.text.verify(); err != nil {
		return err
	}
	if ix.gramSums == nil {
		return nil
	}
	for i, k := range ix.gramKeys {
		if listSum(k, ix.grams.get(i)) != ix.gramSums[i] {
			return fmt.Errorf("%w: posting list %d: checksum mismatch (damaged)", ErrFormat, i)
		}
	}
	return nil
}

// gramList is the posting list of trigram i, or false when a loaded
// index's list fails its checksum.
func (ix *Index) gramList(i int) ([]byte, bool) {
	b := ix.grams.get(i)
	if ix.gramSums != nil && (i >= len(ix.gramSums) || listSum(ix.gramKeys[i], b) != ix.gramSums[i]) {
		return nil, false
	}
	return b, true
}
