//go:build !linux

package tools

import (
	"io/fs"
	"os"

	"github.com/askrepo/askrepo/internal/search"
)

// newSearchReader reads through Workspace.Open: the fast path needs
// Linux's /proc to check where a directory really is.
func newSearchReader(_ *os.Root, _ string, open func(string) (*os.File, fs.FileInfo, error)) search.FileReader {
	return openReader{open: open}
}
