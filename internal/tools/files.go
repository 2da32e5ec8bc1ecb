package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec"
)

// gitTimeout bounds one git call; ls-files on a 13k-file repository takes
// about 0.1s, so this only trips on a wedged filesystem.
const gitTimeout = 30 * time.Second

// SkipDirs are directories the walker never enters when the checkout is
// not a git repository (or git is missing): dependencies, build output,
// caches and editor state, which drown the files a person wrote. In a git
// checkout the ignore rules decide instead, so a committed vendor/ is listed.
var SkipDirs = []string{
	".git", ".hg", ".svn", "node_modules", "vendor", "dist", "build", "target",
	"__pycache__", ".idea", ".vscode", ".venv", "venv", ".tox", ".cache",
	".mypy_cache", ".pytest_cache", ".gradle", ".next", ".terraform",
}

type filesCache struct {
	list []string
	key  string
	at   time.Time
	// tracked is git's record of every tracked file (ls-files --stage
	// output, with -v's tags when tagged), read by stagedSecrets while
	// key holds; "" outside git.
	tracked string
	tagged  bool
	// differs says whether the files differ from HEAD, when the listing
	// was asked that (see DiffersFrom); nil when it was not. head is
	// the commit HEAD was at then: the answer is about that commit.
	differs *bool
	head    string
	// started is when the listing started: an answer about the files
	// from then on.
	started time.Time
}

// Files returns every listable regular file and symlink in the checkout as
// sorted, slash-separated relative paths, without deny-listed ones. In a git
// checkout it is exactly what git shows (tracked files plus untracked ones
// that are not ignored, honouring nested .gitignore, .git/info/exclude and
// $XDG_CONFIG_HOME/git/ignore; no global or system config is read); tracked
// files deleted from disk are dropped.
// Otherwise a walk skips SkipDirs. Symlinked directories are listed as
// entries, never entered.
//
// The result is cached while the git index and HEAD are unchanged, for at
// most WorkspaceOptions.FilesTTL. The returned slice is the caller's.
func (w *Workspace) Files(ctx context.Context) ([]string, error) {
	c, err := w.listing(ctx, time.Time{})
	if err != nil {
		return nil, err
	}
	return slices.Clone(c.list), nil
}

// DiffersFrom reports whether the checkout's files differ from commit,
// which the caller read HEAD at: a tracked file changed, deleted,
// unmerged or staged with other content, a file git does not ignore and
// does not track, a file git is told to skip present on disk, or HEAD
// found elsewhere by now (the answer is about the commit the caller will
// use, its code index, not whatever HEAD is by then). A checkout git
// cannot read, or outside git, counts as differing. A listing that
// started at since or later, under way or done (see Warm), is taken as
// fresh; else the checkout is listed afresh, and Files then reuses that
// listing: the check and the listing a search needs are one set of git
// calls, not two.
func (w *Workspace) DiffersFrom(ctx context.Context, commit string, since time.Time) bool {
	c, err := w.listing(ctx, since)
	return err != nil || c.differs == nil || *c.differs || c.head != commit
}

// Warm starts listing the checkout in the background, so that a command
// that runs one call lists it while it opens the rest (the code index, the
// lease) rather than after; with againstHead (unless the checkout is
// Owned), also checked against HEAD for DiffersFrom. It ends
// with ctx, or Close.
func (w *Workspace) Warm(ctx context.Context, againstHead bool) {
	since := time.Time{}
	if againstHead && !w.owned {
		since = time.Now()
	}
	w.gitMu.Lock()
	defer w.gitMu.Unlock()
	if w.warm != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.warm = func() { cancel(); <-done }
	go func() {
		defer close(done)
		_, _ = w.listing(ctx, since)
	}()
}

// listing returns the checkout's listing. With a zero fresh, the cached
// one while it holds; otherwise one started at fresh or later, which also
// says whether the files differ from HEAD.
func (w *Workspace) listing(ctx context.Context, fresh time.Time) (*filesCache, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	select {
	case w.lock <- struct{}{}:
		defer func() { <-w.lock }()
	case <-ctx.Done():
		return nil, fmt.Errorf("list files: %w", ctx.Err())
	}
	head := !fresh.IsZero()
	git, gerr := w.Git(ctx)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	if gerr != nil {
		git = gitexec.Git{} // not a repository, or not its own: walk
	}
	key := cacheKey(git.GitDir)
	if c := w.files; c != nil && c.key == key {
		if !head && w.ttl > 0 && time.Since(c.at) < w.ttl {
			return c, nil
		}
		if head && c.differs != nil && !c.started.Before(fresh) && w.headAt(ctx, c.head) {
			return c, nil
		}
	}
	c := &filesCache{key: key, started: time.Now()}
	var err error
	switch {
	case git.GitDir != "" && w.owned:
		err = w.ownedFiles(ctx, git, c)
	case git.GitDir != "":
		err = w.gitFiles(ctx, git, c, head)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("git ls-files failed; walking the directory instead", "err", err)
			*c = filesCache{key: key}
			c.list, err = w.walkFiles(ctx)
		}
	default:
		c.list, err = w.walkFiles(ctx)
	}
	if err != nil {
		return nil, err
	}
	c.at = time.Now()
	w.files = c
	return c, nil
}

// headAt says whether HEAD is still at commit: what a listing's check
// against HEAD compared the files with. Neither the index nor the HEAD
// file (cacheKey) changes when a branch is moved under a checkout
// (update-ref, reset --soft), so it is asked (see GitHead: a few stats
// while nothing moved).
func (w *Workspace) headAt(ctx context.Context, commit string) bool {
	now, err := w.GitHead(ctx)
	return err == nil && commit != "" && now == commit
}

// cacheKey changes when a commit, checkout, pull or add rewrites the index
// or moves HEAD.
func cacheKey(gitDir string) string {
	if gitDir == "" {
		return ""
	}
	var b strings.Builder
	if fi, err := os.Stat(filepath.Join(gitDir, "index")); err == nil {
		b.WriteString(strconv.FormatInt(fi.ModTime().UnixNano(), 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(fi.Size(), 10))
	}
	if head, err := os.ReadFile(filepath.Join(gitDir, "HEAD")); err == nil {
		b.WriteByte(' ')
		b.Write(bytes.TrimSpace(head))
	}
	return b.String()
}

// gitFiles lists the checkout into c with two git calls run side by side:
// one reads the index and checks which tracked files are still on disk,
// the other walks the tree for untracked files that are not ignored (the
// larger part, about 20 ms for 12k files). Besides the names, git says
// what each tracked entry is, which saves a stat per file in this process
// (for a large checkout that used to be most of the cost of a listing): -v
// tags tracked files deleted from disk (R, listed once more as a second
// entry) and, with --modified, changed ones (C, likewise), --stage gives
// the mode, which marks submodules (160000, directories, never listed).
// Tracked files with skip-worktree set (sparse checkouts, or a local
// override someone keeps) may or may not be on disk, and are the only ones
// checked here. A tracked file replaced on disk by a directory stays
// listed; opening it says what it is.
//
// With head set, a third call compares the index with HEAD, and c.differs
// says whether anything differs from HEAD: what git status would show,
// without status's own walk (or its rewriting the index), and more: a file
// git was told to skip (assume-unchanged, or skip-worktree yet on disk)
// counts as differing, since git would not see an edit to it and a search
// reads it from disk.
func (w *Workspace) gitFiles(ctx context.Context, git gitexec.Git, c *filesCache, head bool) error {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	type result struct {
		out string
		err error
	}
	others := make(chan result, 1)
	go func() {
		out, err := lsFiles(ctx, git, "--others", "--exclude-standard")
		others <- result{out, err}
	}()
	staged := make(chan bool, 1)
	if head {
		// The commit is read first, and the index compared with it: a
		// HEAD moved later makes the answer stale (see listing).
		commit, err := w.GitHead(ctx)
		if err != nil {
			commit = ""
		}
		c.head = commit
		go func() { staged <- commit == "" || stagedChanges(ctx, git, commit) }()
	}
	tracked, err := lsFiles(ctx, statChecked(git), "-v", "--stage", "--deleted", "--modified")
	o := <-others
	if err == nil {
		err = o.err
	}
	if err != nil {
		return err
	}
	t, err := parseLsFiles(tracked, w.dir)
	if err != nil {
		return err
	}
	list, untracked := t.list, false
	for name := range strings.SplitSeq(o.out, "\x00") {
		if name != "" {
			list = append(list, name)
			untracked = true
		}
	}
	slices.Sort(list)
	list = slices.Compact(list) // a conflicted file is listed once per stage
	if len(t.deleted) > 0 {
		slices.Sort(t.deleted)
		list = slices.DeleteFunc(list, func(n string) bool {
			_, found := slices.BinarySearch(t.deleted, n)
			return found
		})
	}
	c.list = slices.DeleteFunc(list, newDenyIndex(w.deny).denied)
	c.tracked, c.tagged = tracked, true
	if head {
		// ls-files compares the content of a file whose stat alone
		// changed (touched, rewritten with the same bytes) before it
		// calls it modified.
		differs := untracked || len(t.deleted) > 0 || len(t.modified) > 0 || t.unmerged || t.unchecked || <-staged
		c.differs = &differs
	}
	return nil
}

// ownedFiles lists a worktree the caller checked out and nothing else
// writes (WorkspaceOptions.Owned) from git's index alone: its files are
// the commit's, so there is nothing untracked to walk for and no file to
// stat, and one ls-files of a few milliseconds replaces the two calls of
// gitFiles (about 20 ms on 12k files).
func (w *Workspace) ownedFiles(ctx context.Context, git gitexec.Git, c *filesCache) error {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	out, err := lsFiles(ctx, git, "--stage")
	if err != nil {
		return err
	}
	var list []string
	for rec := range strings.SplitSeq(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok || strings.Count(meta, " ") != 2 {
			return fmt.Errorf("git ls-files: unexpected record %q", rec)
		}
		if !strings.HasPrefix(meta, "160000 ") { // a submodule is a directory
			list = append(list, name)
		}
	}
	slices.Sort(list)
	c.list = slices.DeleteFunc(slices.Compact(list), newDenyIndex(w.deny).denied)
	c.tracked = out
	return nil
}

// statChecked is git with every stat field it records checked, whatever
// the repository's config says: with core.trustctime=false or
// core.checkStat=minimal, a file rewritten in place at the same size with
// its mtime put back would pass for unchanged, its content unread.
func statChecked(git gitexec.Git) gitexec.Git {
	git.Config = append(slices.Clip(git.Config), [2]string{"core.trustctime", "true"}, [2]string{"core.checkStat", "default"})
	return git
}

// stagedChanges says whether git's index differs from commit (a change
// staged and not committed), or git could not tell. Submodules are left
// out, as the listing leaves them out.
func stagedChanges(ctx context.Context, git gitexec.Git, commit string) bool {
	cmd := git.Command(ctx, "diff-index", "--cached", "--quiet", "--ignore-submodules=all", "--no-ext-diff", "--no-textconv", commit, "--")
	return cmd.Run() != nil // exit 1: they differ; anything else: unknown
}

// lsFiles runs git ls-files -z with args and returns its output.
// ls-files reads the index and the directory; it runs no filter.
func lsFiles(ctx context.Context, git gitexec.Git, args ...string) (string, error) {
	cmd := git.Command(ctx, append([]string{"ls-files", "-z"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("list files: %w", ctx.Err())
		}
		return "", fmt.Errorf("git ls-files: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// trackedFiles is what `git ls-files -z -v --stage --deleted --modified`
// says of the tracked files.
type trackedFiles struct {
	list     []string // to list: not yet sorted, possibly repeated
	deleted  []string // deleted from disk
	modified []string // whose stat differs from the index's (content maybe not)
	unmerged bool     // a file is in an unresolved merge
	// unchecked says that a file git was told not to look at (marked
	// assume-unchanged, or skip-worktree and on disk) is there, and may
	// hold anything: git reports no change to it.
	unchecked bool
}

// parseLsFiles reads the output of `git ls-files -z -v --stage --deleted
// --modified`, run in dir. Records read "<tag> <mode> <object>
// <stage>\t<path>"; -v's tag is -t's, in lower case for a file marked
// assume-unchanged, which git neither checks on disk nor reports modified.
func parseLsFiles(out, dir string) (trackedFiles, error) {
	var t trackedFiles
	for rec := range strings.SplitSeq(out, "\x00") {
		if rec == "" {
			continue
		}
		tag, rest, ok := strings.Cut(rec, " ")
		meta, name, ok2 := strings.Cut(rest, "\t")
		if !ok || !ok2 || len(tag) != 1 {
			return trackedFiles{}, fmt.Errorf("git ls-files: unexpected record %q", rec)
		}
		if upper := strings.ToUpper(tag); upper != tag {
			tag = upper
			t.unchecked = t.unchecked || !strings.HasPrefix(meta, "160000 ")
		}
		switch {
		case strings.HasPrefix(meta, "160000 "):
			// A submodule: a directory, not a file.
		case tag == "R":
			t.deleted = append(t.deleted, name)
		case tag == "C":
			t.modified = append(t.modified, name) // listed by its own entry
		case tag == "S":
			// git never looks at skip-worktree files on disk.
			if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name))); err == nil && (fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0) {
				t.list = append(t.list, name)
				t.unchecked = true
			}
		default:
			t.unmerged = t.unmerged || tag == "M"
			t.list = append(t.list, name)
		}
	}
	return t, nil
}

// walkFiles lists the checkout without git. fs.WalkDir on the root's FS
// reports symlinks as entries and never follows them.
func (w *Workspace) walkFiles(ctx context.Context) ([]string, error) {
	var list []string
	deny := newDenyIndex(w.deny)
	n := 0
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if n++; n%256 == 1 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if p == "." {
				return err
			}
			w.log.Debug("skipping unreadable path", "path", p, "err", err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p == "." {
			return nil
		}
		if d.IsDir() {
			if slices.Contains(SkipDirs, d.Name()) || deny.denied(p) {
				return fs.SkipDir
			}
			return nil
		}
		if (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) && !deny.denied(p) {
			list = append(list, p)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("list files: %w", err)
		}
		return nil, fmt.Errorf("walk the checkout: %w", err)
	}
	slices.Sort(list)
	return list, nil
}
