package tools

import (
	"io/fs"
	"syscall"
	"time"
)

// fileID tells one version of a file from another without reading it: a
// file renamed into place has a new inode, and a change sets ctime, which
// no one can set back.
type fileID struct {
	ino          uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

// exactStat says whether statID tells every version apart (inode and
// change time included), as the refs' stamp needs (see refsStamp).
const exactStat = true

func statID(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{ino: st.Ino, size: st.Size, mtime: fi.ModTime().UnixNano(), ctime: st.Ctim.Nano()}, true
}

// changed is when the file last changed, as its file system says.
func (id fileID) changed() time.Time { return time.Unix(0, max(id.mtime, id.ctime)) }

// fields is every part of id, for a stamp.
func (id fileID) fields() []uint64 {
	return []uint64{id.ino, uint64(id.size), uint64(id.mtime), uint64(id.ctime)}
}
