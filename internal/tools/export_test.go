package tools

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
