package repos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/askrepo/askrepo/internal/flock"
)

// Several processes may share one DataDir: the service, and an operator's
// bot tool, bot ask or bot mcp run beside it with the same environment.
// Each keeps the worktrees it checks out in a directory of its own under
// trees/ (trees/<owner>/<seq>-<sha12>), named at random, on which it holds
// an exclusive flock until it has no worktree left in use there: in
// practice, for its life. A directory whose lock is free belongs to a
// process that is gone, however it ended; any process may then remove it
// (or, one-shot, adopt one worktree in it), holding its lock meanwhile so
// that no two work on it at once. A live process's directories are never
// touched. `git worktree prune` runs only after the dead directories are
// removed, and drops only the records of worktrees whose directory is
// gone, which a live process's are not while it holds them; git keeps a
// worktree it is still adding locked ("initializing"), so a prune cannot
// drop that one either. That is why the worktrees are not `worktree lock`ed:
// prune already spares every live one, and locked records of the dead
// would stay forever.
//
// Nothing but this service writes under DataDir (0700), so a worktree git
// wrote there is trusted as the service's own: adopting one checks that
// it is a complete worktree of this clone at the commit wanted (see
// adoptable), not every file in it.

// owner is a directory of trees/ this process holds the lock of; f keeps
// the lock (nil where locks are not supported).
type owner struct {
	dir string
	f   *os.File
}

// lockDir opens the directory at path and takes its lock: flock.ErrLocked when a
// live process holds it. The lock is on what was opened, so it is checked
// to still be what path names: a process that removed the directory in
// between held the lock while it did.
func lockDir(path string) (*owner, error) {
	f, err := flock.OpenDir(path)
	if err != nil {
		return nil, err
	}
	if err := flock.TryLock(f); err != nil {
		f.Close()
		return nil, err
	}
	fi, err := f.Stat()
	pi, perr := os.Lstat(path)
	if err != nil || perr != nil || !os.SameFile(fi, pi) {
		f.Close()
		return nil, fs.ErrNotExist
	}
	return &owner{dir: path, f: f}, nil
}

// claimOwner makes a new directory under trees and locks it. A sweeping
// process may take and remove it before the lock is taken: then another
// name is tried.
func claimOwner(trees string) (*owner, error) {
	if err := os.MkdirAll(trees, 0o750); err != nil {
		return nil, fmt.Errorf("create the worktree directory: %w", err)
	}
	for range 5 {
		dir, err := os.MkdirTemp(trees, "p")
		if err != nil {
			return nil, fmt.Errorf("create the worktree directory: %w", err)
		}
		o, err := lockDir(dir)
		if errors.Is(err, errors.ErrUnsupported) {
			return &owner{dir: dir}, nil
		}
		if err == nil {
			return o, nil
		}
	}
	return nil, fmt.Errorf("lock a worktree directory of this process under %s: another process keeps removing them", trees)
}

// drop removes o's directory if it is empty (a one-shot process leaves its
// last worktree for the next one to adopt) and gives up its lock. Nil is
// nothing.
func (o *owner) drop() {
	if o == nil {
		return
	}
	_ = os.Remove(o.dir) // fails, as it should, when not empty
	if o.f != nil {
		o.f.Close()
	}
}

// ownerDir is r's owner directory, claimed at its first worktree.
func (m *Manager) ownerDir(r *repo) (*owner, error) {
	r.mu.Lock()
	o := r.owner
	r.mu.Unlock()
	if o != nil {
		return o, nil
	}
	o, err := claimOwner(filepath.Join(r.root, "trees"))
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.owner = o
	r.mu.Unlock()
	return o, nil
}

// sweep removes what processes that are gone left under trees/, and what
// is no owner directory at all. When adopt is a commit and r has no owner
// directory yet, the first dead one holding a complete worktree of the
// clone at adopt becomes r's (its other worktrees removed), and that
// worktree's directory is returned; else "". removed says whether any
// worktree was removed, which leaves a record for git worktree prune.
func (m *Manager) sweep(r *repo, adopt string) (adopted string, removed bool) {
	trees := filepath.Join(r.root, "trees")
	ents, err := os.ReadDir(trees)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			m.log.Warn("list worktrees", "repo", r.spec.Name, "err", err)
		}
		return "", false
	}
	r.mu.Lock()
	own := r.owner
	r.mu.Unlock()
	for _, e := range ents {
		p := filepath.Join(trees, e.Name())
		if own != nil && p == own.dir {
			continue
		}
		if !e.IsDir() { // a symlink or a file: no process's directory
			m.removeTree(r, p)
			removed = true
			continue
		}
		o, err := lockDir(p)
		if err != nil {
			if !errors.Is(err, flock.ErrLocked) && !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, fs.ErrNotExist) {
				m.log.Warn("lock a worktree directory left by another process", "repo", r.spec.Name, "dir", p, "err", err)
			}
			continue
		}
		if adopt != "" && own == nil {
			if dir, others := m.adopt(r, o, adopt); dir != "" {
				own, adopted = o, dir
				removed = removed || others
				continue
			}
		}
		m.removeTree(r, p)
		o.drop()
		removed = true
	}
	return adopted, removed
}

// adopt makes dead owner directory o r's own if it holds a complete
// worktree of the clone at sha, removing the rest of it; it returns that
// worktree's directory, or "", and whether it removed anything.
func (m *Manager) adopt(r *repo, o *owner, sha string) (string, bool) {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return "", false
	}
	dir := ""
	for _, e := range ents {
		p := filepath.Join(o.dir, e.Name())
		if dir != "" || !e.IsDir() || !strings.HasSuffix(e.Name(), "-"+shortSHA(sha)) {
			continue
		}
		if err := adoptable(p, r.gitDir(), sha); err != nil {
			m.log.Debug("not reusing a worktree left by an earlier run", "repo", r.spec.Name, "dir", p, "reason", err)
			continue
		}
		dir = p
	}
	if dir == "" {
		return "", false
	}
	for _, e := range ents {
		if p := filepath.Join(o.dir, e.Name()); p != dir {
			m.removeTree(r, p)
		}
	}
	seq, _, _ := strings.Cut(filepath.Base(dir), "-")
	n, _ := strconv.Atoi(seq)
	r.mu.Lock()
	r.owner = o
	r.mu.Unlock()
	r.seq = max(r.seq, n)
	return dir, len(ents) > 1
}

// adoptable checks that dir is a worktree git finished adding for the
// clone gd, whose record in the clone is of dir itself, at commit sha.
// Its files are not read: nothing but the service writes in DataDir.
func adoptable(dir, gd, sha string) error {
	wt, err := worktreeGitDir(dir, gd)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	back, err := os.ReadFile(filepath.Join(wt, "gitdir"))
	if err != nil || strings.TrimSpace(string(back)) != filepath.Join(real, ".git") {
		return errors.New("the clone's record of the worktree is of another directory")
	}
	if _, err := os.Lstat(filepath.Join(wt, "locked")); err == nil {
		return errors.New("its checkout did not finish")
	}
	head, err := os.ReadFile(filepath.Join(wt, "HEAD"))
	if err != nil || strings.TrimSpace(string(head)) != sha {
		return errors.New("it is at another commit")
	}
	return nil
}

func (m *Manager) removeTree(r *repo, p string) {
	if err := removeWorktrees(p); err != nil {
		m.log.Warn("remove a worktree left by an earlier run", "repo", r.spec.Name, "dir", p, "err", err)
	}
}

func shortSHA(sha string) string { return sha[:min(12, len(sha))] }

// removeWorktrees removes p: a worktree, an owner directory of them, or
// anything else left under trees/. The .git file of each worktree goes
// first, so that a removal cut short (the process killed while it
// deletes thousands of files) never leaves part of a worktree that still
// looks complete to adopt (see adoptable); the next sweep removes the
// rest. No symlink is followed.
func removeWorktrees(p string) error {
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		_ = os.Remove(filepath.Join(p, ".git"))
		if ents, err := os.ReadDir(p); err == nil {
			for _, e := range ents {
				if e.IsDir() {
					_ = os.Remove(filepath.Join(p, e.Name(), ".git"))
				}
			}
		}
	}
	return removeAll(p)
}

// removeAll is os.RemoveAll; a test cuts it short, as the end of a
// process killed while it removes a worktree does.
var removeAll = os.RemoveAll
