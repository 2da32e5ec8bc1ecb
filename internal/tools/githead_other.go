//go:build !linux

package tools

import (
	"io/fs"
	"time"
)

// fileID tells one version of a file from another without reading it, as
// far as a portable stat can: size and modification time.
type fileID struct {
	size  int64
	mtime int64 // nanoseconds
}

func statID(fi fs.FileInfo) (fileID, bool) {
	return fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true
}

// changed is when the file last changed, as its file system says.
func (id fileID) changed() time.Time { return time.Unix(0, id.mtime) }
