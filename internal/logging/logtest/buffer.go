package logtest

import (
	"bytes"
	"sync"
)

// Buffer collects what a logger, or a process's output, writes while a test
// reads it: Write and String are safe for concurrent use, which a plain
// bytes.Buffer is not. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
