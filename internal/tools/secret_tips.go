package tools

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Every search asks git for the tips of the repository's history (refTips)
// before it reads a file, so that a secret committed since the last call
// is known: one git process, 2-3 ms on a fast machine, most of a search
// through the code index. The tips change only when a file git reads for
// them does: HEAD, packed-refs, refs/, logs/ (the reflogs), reftable/, and
// each linked worktree's HEAD, refs/ and logs/. So the tips are kept with
// the secret index beside a stamp of those files (see refsStamp) and asked
// of git again only when the stamp differs.
//
// git writes a ref, HEAD or packed-refs to a lock file renamed into place
// (a new inode, a changed directory) and appends to a reflog (a larger
// file): a change always shows in the stamp, except within the file
// system's clock tick, where two writes can share a time and an inode can
// be reused. A stamp holding a change newer than tipsSettle is therefore
// never kept: the tips are asked of git each time until it settles.

// tipsSettle is how old the newest change under the refs must be for the
// stamp to be trusted; far longer than any file system's clock tick.
var tipsSettle = 2 * time.Second

// maxStampEntries bounds the files a stamp looks at; a repository with
// more loose refs than this asks git every time.
const maxStampEntries = 20000

// refsStamp describes, by inode, size, and modification and change times,
// every file and directory git reads for the tips of the repository whose
// common git directory is common. ok is false when it cannot be trusted:
// a file system whose stat says less (see exactStat), too many refs, an
// unreadable entry, a symlink, or a change newer than tipsSettle before now.
func refsStamp(common string, now time.Time) (stamp string, ok bool) {
	if !exactStat {
		return "", false
	}
	var b strings.Builder
	n := 0
	newest := time.Time{}
	add := func(rel string, fi fs.FileInfo) bool {
		id, ok := statID(fi)
		if !ok || fi.Mode()&fs.ModeSymlink != 0 {
			// git reads refs through a link, and a change behind it
			// does not show here.
			return false
		}
		n++
		if c := id.changed(); c.After(newest) {
			newest = c
		}
		b.WriteString(rel)
		rec := binary.LittleEndian.AppendUint64(nil, uint64(fi.Mode()))
		for _, v := range id.fields() {
			rec = binary.LittleEndian.AppendUint64(rec, v)
		}
		b.Write(rec)
		return n <= maxStampEntries
	}
	// stat adds one entry, or its absence; dir says it is a directory.
	stat := func(rel string) (dir, ok bool) {
		fi, err := os.Lstat(filepath.Join(common, rel))
		if errors.Is(err, fs.ErrNotExist) {
			b.WriteString(rel + "\x00-")
			return false, true
		}
		return err == nil && fi.IsDir(), err == nil && add(rel, fi)
	}
	// walk adds an entry and, for a directory, everything under it.
	var walk func(rel string) bool
	walk = func(rel string) bool {
		dir, ok := stat(rel)
		if !ok || !dir {
			return ok
		}
		ents, err := os.ReadDir(filepath.Join(common, rel))
		if err != nil {
			return false
		}
		for _, e := range ents {
			if !walk(rel + "/" + e.Name()) {
				return false
			}
		}
		return true
	}
	for _, f := range []string{"HEAD", "packed-refs", "refs", "logs", "reftable"} {
		if !walk(f) {
			return "", false
		}
	}
	// Linked worktrees: the directory itself (one added or removed), and
	// in each, what holds refs (not its index, which git rewrites often).
	if _, ok := stat("worktrees"); !ok {
		return "", false
	}
	wts, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	for _, w := range wts {
		rel := "worktrees/" + w.Name()
		if _, ok := stat(rel); !ok || !walk(rel+"/HEAD") || !walk(rel+"/refs") || !walk(rel+"/logs") {
			return "", false
		}
	}
	if now.Sub(newest) < tipsSettle {
		return "", false
	}
	return b.String(), true
}

// tipsCache is the last tips git gave for a repository, and the stamp of
// its refs they were read under.
type tipsCache struct {
	stamp string
	tips  []string
	// asked counts the times git was asked, for the tests.
	asked int
}

// cachedTips is refTips, answered from x's cache when the refs are as
// they were when git last gave the tips. x is nil until the workspace's
// secret index is known (after its first secrets call).
func (g *gitCLI) cachedTips(ctx context.Context, x *secretIndex) ([]string, error) {
	if x == nil {
		return g.refTips(ctx)
	}
	stamp, ok := refsStamp(x.common, time.Now())
	x.mu.Lock()
	if ok && x.tips.stamp == stamp && x.tips.tips != nil {
		tips := x.tips.tips
		x.mu.Unlock()
		return tips, nil
	}
	x.mu.Unlock()
	tips, err := g.refTips(ctx)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.tips.asked++
	if err == nil && ok {
		if tips == nil {
			tips = []string{}
		}
		x.tips.stamp, x.tips.tips = stamp, tips
	}
	return tips, err
}
