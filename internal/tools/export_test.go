package tools

import (
	"context"
	"time"
)

// SymbolFiles are the files the symbol tools' tests run on, for the tests
// through the real index (package tools_test, which may import it).
var SymbolFiles = symbolFiles

// forgetSecretIndexes empties the process's secret indexes, as a new
// process starts.
func forgetSecretIndexes() {
	secretIndexes.Lock()
	defer secretIndexes.Unlock()
	clear(secretIndexes.m)
}

// DiffersFromHead is DiffersFrom against whatever HEAD is when the
// checkout is listed, afresh.
func (w *Workspace) DiffersFromHead(ctx context.Context) bool {
	c, err := w.listing(ctx, time.Now())
	return err != nil || c.differs == nil || *c.differs
}
