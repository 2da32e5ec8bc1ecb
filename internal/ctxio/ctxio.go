// Package ctxio makes a read of a file stop when its context ends. A read
// of a local file does not block on anything a context could cancel, but a
// large file (or one line of any length) is many reads, and a caller that
// has given up should not wait for the last of them.
//
// It imports no other internal package: it is a leaf that every package
// that reads a checkout's files can use.
package ctxio

import (
	"context"
	"io"
)

// Reader fails every read with ctx's error once ctx has ended. It looks
// at ctx once a read, so a caller that reads through a buffer of n bytes
// looks at it every n bytes.
type Reader struct {
	Ctx context.Context
	R   io.Reader
}

func (c Reader) Read(p []byte) (int, error) {
	if err := c.Ctx.Err(); err != nil {
		return 0, err
	}
	return c.R.Read(p)
}
