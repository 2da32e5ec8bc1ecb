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

// exactStat says whether statID tells every version apart (inode and
// change time included), as the refs' stamp needs (see refsStamp).
const exactStat = false

func statID(fi fs.FileInfo) (fileID, bool) {
	return fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, true
}

// changed is when the file last changed, as its file system says.
func (id fileID) changed() time.Time { return time.Unix(0, id.mtime) }

// fields is every part of id, for a stamp.
func (id fileID) fields() []uint64 { return []uint64{uint64(id.size), uint64(id.mtime)} }
