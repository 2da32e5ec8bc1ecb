package repos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/tools"
)

// On disk, the index of repository <name> at <commit> is DataDir/index/
// <name>/<commit> (what Indexer.Save writes there), private to the
// service (0700 directories, 0600 files). It is written as .tmp-<commit>
// and renamed, so a crash leaves no half index under a commit's name. A
// restart loads the current commit's index; when only an older one is
// there, the new one is updated from it. After each build the directory
// holds only the indexes still in memory.

// errLargeDiff is returned when the list of changed paths is past
// maxDiffOutput: the index is built anew instead.
var errLargeDiff = errors.New("the list of changed paths is too large")

// maxDiffOutput caps the output of git diff --name-only.
const maxDiffOutput = 32 << 20

// diffTimeout bounds listing the changes between two commits.
const diffTimeout = 2 * time.Minute

// make returns the index of ws at commit: the one an earlier run saved,
// else updated from the newest index there is, else built; how says which.
func (ix *indexer) make(ctx context.Context, r *repo, ws *tools.Workspace, commit string) (idx tools.CodeIndex, how string, err error) {
	if idx := ix.load(ctx, r, ws, commit); idx != nil {
		return idx, "loaded", nil
	}
	// A path checkout's files are read as they are: the index matches its
	// commit only if nothing differs from it before and after the build.
	exact := !r.local || !ws.DiffersFrom(ctx, commit, time.Now())
	finish := func(idx tools.CodeIndex) tools.CodeIndex {
		if exact = exact && (!r.local || !ws.DiffersFrom(ctx, commit, time.Now())); !exact {
			return inexact{idx}
		}
		ix.save(r, idx, commit)
		return idx
	}
	log := ix.log.With("repo", r.spec.Name, "commit", commit)
	if base := ix.base(ctx, r, ws, commit); base != nil && !isInexact(base) {
		changed, err := changedPaths(ctx, ws, base.Commit(), commit)
		if err == nil {
			idx, err = ix.impl.Update(ctx, base, ws, commit, changed)
		}
		if err == nil {
			return finish(idx), "updated", nil
		}
		if ctx.Err() != nil {
			return nil, "", err
		}
		log.Info("code index: building anew, not updating", "from", base.Commit(), "reason", err)
	}
	idx, err = ix.impl.Build(ctx, ws, commit)
	if err != nil {
		return nil, "", err
	}
	return finish(idx), "built", nil
}

// path is where the index of r at commit is kept; "" when indexes are not
// kept on disk, or commit is not a commit id.
func (ix *indexer) path(r *repo, name string) string {
	if ix.dir == "" || !isCommitID(name) {
		return ""
	}
	return filepath.Join(ix.dir, r.spec.Name, name)
}

func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// load reads the saved index of commit, if one is there and can be
// trusted; one that cannot is deleted, to be built again.
func (ix *indexer) load(ctx context.Context, r *repo, ws *tools.Workspace, commit string) tools.CodeIndex {
	p := ix.path(r, commit)
	if p == "" {
		return nil
	}
	if _, err := os.Lstat(p); err != nil {
		return nil
	}
	idx, err := ix.impl.Load(ctx, p, ws)
	if err == nil && idx.Commit() != commit {
		err = fmt.Errorf("it describes commit %s", idx.Commit())
	}
	if err != nil && ctx.Err() != nil {
		return nil // canceled: it says nothing of the saved index
	}
	if err != nil {
		ix.log.Warn("a saved code index cannot be used; building it again", "repo", r.spec.Name, "commit", commit, "err", err)
		ix.removePath(p)
		return nil
	}
	return idx
}

// base is the index the one of commit is updated from: the newest ready
// in memory, else (once per run) the newest saved one of another commit,
// which then stays as the base until something newer is ready.
func (ix *indexer) base(ctx context.Context, r *repo, ws *tools.Workspace, commit string) tools.CodeIndex {
	x := &r.indexes
	x.mu.Lock()
	if x.base != nil {
		defer x.mu.Unlock()
		return x.base.idx
	}
	swept := x.swept
	x.swept = true
	x.mu.Unlock()
	if swept || ix.dir == "" {
		return nil
	}
	ents, _ := os.ReadDir(filepath.Join(ix.dir, r.spec.Name))
	var newest string
	var at time.Time
	for _, d := range ents {
		fi, err := d.Info()
		if err != nil || d.Name() == commit || !isCommitID(d.Name()) {
			continue
		}
		if newest == "" || fi.ModTime().After(at) {
			newest, at = d.Name(), fi.ModTime()
		}
	}
	if newest == "" {
		return nil
	}
	idx := ix.load(ctx, r, ws, newest)
	if idx == nil {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.base == nil {
		e := x.entry(newest)
		e.state, e.idx, e.built = IndexReady, idx, at
		x.base = e
	}
	return x.base.idx
}

// save writes idx under a temporary name, makes it private, and renames
// it into place. A failure is logged: the index still serves from memory.
func (ix *indexer) save(r *repo, idx tools.CodeIndex, commit string) {
	p := ix.path(r, commit)
	if p == "" {
		return
	}
	tmp := filepath.Join(filepath.Dir(p), ".tmp-"+commit)
	err := os.MkdirAll(filepath.Dir(p), 0o700)
	if err == nil {
		err = os.RemoveAll(tmp)
	}
	if err == nil {
		err = ix.impl.Save(idx, tmp)
	}
	if err == nil {
		err = private(tmp)
	}
	if err == nil {
		err = os.RemoveAll(p)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		ix.log.Warn("save the code index; it serves from memory until the next restart", "repo", r.spec.Name, "commit", commit, "err", err)
		ix.removePath(tmp)
	}
}

// private makes what Save wrote at p readable by the service alone: an
// index holds the repository's text.
func private(p string) error {
	return filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Chmod(path, 0o700)
		case d.Type().IsRegular():
			return os.Chmod(path, 0o600)
		}
		return nil
	})
}

// remove deletes the saved indexes of commits dropped from memory.
func (ix *indexer) remove(r *repo, commits []string) {
	if ix == nil || !ix.mayDelete() {
		return
	}
	for _, c := range commits {
		if p := ix.path(r, c); p != "" {
			ix.removePath(p)
		}
	}
}

func (ix *indexer) removePath(p string) {
	if err := os.RemoveAll(p); err != nil {
		ix.log.Warn("remove a code index", "err", err)
	}
}

// sweep deletes what r's index directory holds besides the indexes in
// memory: those of commits an earlier run served, and leftovers of a
// save cut short. Only the builder writes there, and it calls this, but
// for a OneShot Manager beside another process (mayDelete).
func (ix *indexer) sweep(r *repo) {
	if ix.dir == "" || !ix.mayDelete() {
		return
	}
	dir := filepath.Join(ix.dir, r.spec.Name)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	x := &r.indexes
	for _, d := range ents {
		x.mu.Lock()
		_, kept := x.byID[d.Name()]
		x.mu.Unlock()
		if !kept {
			ix.removePath(filepath.Join(dir, d.Name()))
		}
	}
}

// changedPaths lists the paths that differ between commits old and new,
// relative to ws (only those under it, for a checkout below the top of
// its repository): both sides of a rename, as a deletion and an addition,
// NUL-separated so no name is quoted or split.
func changedPaths(ctx context.Context, ws *tools.Workspace, old, new string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, diffTimeout)
	defer cancel()
	g, err := ws.Git(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{"diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"}
	if prefix, _ := ws.GitPrefix(ctx); prefix != "" {
		args = append(args, "--relative="+prefix)
	}
	args = append(args, old, new, "--")
	cmd := g.Command(ctx, args...)
	var out, stderr capped
	out.max, stderr.max = maxDiffOutput+1, maxGitOutput
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git diff --name-only: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if out.Len() > maxDiffOutput {
		return nil, errLargeDiff
	}
	var paths []string
	for p := range bytes.SplitSeq(out.Bytes(), []byte{0}) {
		if len(p) > 0 {
			paths = append(paths, string(p))
		}
	}
	return paths, nil
}
