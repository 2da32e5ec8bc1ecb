package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// headArgs make git rev-parse print the commit HEAD is at after what
// else it prints; with --quiet a HEAD at no commit (a repository with no
// commit yet) exits 1 with nothing more, instead of failing the call.
var headArgs = []string{"--verify", "--quiet", "HEAD^{commit}"}

// headMemo is the commit HEAD was at when the files that say where it
// is looked as stamp records.
type headMemo struct {
	stamp  headStamp
	commit string
}

// GitHead returns the commit the checkout's HEAD is at now, "" when it is
// at none (a repository with no commit yet, a HEAD git cannot resolve to a
// commit). It runs git only when the files that say where HEAD is have
// changed since it last asked (see headStamp): a one-shot command reads
// HEAD once, with the repository's layout, and a long-running service
// still sees every commit, checkout, reset or pack-refs. The error wraps
// ErrNotGitRepo or ErrForeignGitDir when git is off for the checkout, or
// says why git could not answer now.
func (w *Workspace) GitHead(ctx context.Context) (string, error) {
	g, err := w.Git(ctx)
	if err != nil {
		return "", err
	}
	w.gitMu.Lock()
	gitDir, common, memo := w.repo.realGitDir, w.repo.common, w.repo.head
	w.gitMu.Unlock()
	if gitDir == "" {
		gitDir = g.GitDir // a worktree the caller made
	} else {
		// Found by git and checked: its common directory is itself
		// (foreignGitDir), named by the same real path the layout's
		// stamp used.
		common = gitDir
	}
	before := stampHead(gitDir, common)
	if memo != nil && before.ok && slices.Equal(before.files, memo.stamp.files) {
		return memo.commit, nil
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	out, err := g.Command(ctx, append([]string{"rev-parse"}, headArgs...)...).Output()
	commit, err := headFrom(string(out), err)
	if err != nil {
		return "", fmt.Errorf("read the checkout's HEAD: %w", err)
	}
	// Kept only when nothing moved while git read it, so the commit is
	// the one the stamp describes.
	if after := stampHead(gitDir, common); before.ok && slices.Equal(before.files, after.files) {
		w.gitMu.Lock()
		if w.repo != nil {
			w.repo.head = &headMemo{stamp: before, commit: commit}
		}
		w.gitMu.Unlock()
	}
	return commit, nil
}

// layoutHead is what the layout's rev-parse said of HEAD (its lines after
// the layout's: none when HEAD is at no commit), kept when the files
// stamped before and after it ran in the git directory it used are the
// same; nil otherwise.
func layoutHead(rest []string, before, after headStamp) *headMemo {
	if !before.ok || !slices.Equal(before.files, after.files) {
		return nil
	}
	commit := ""
	if len(rest) == 1 {
		commit = rest[0]
	}
	if commit != "" && !isCommitID(commit) {
		return nil
	}
	return &headMemo{stamp: before, commit: commit}
}

// headFrom is the commit in out, the last line rev-parse printed with
// headArgs, given how it exited: "" when HEAD is at no commit.
func headFrom(out string, err error) (string, error) {
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return "", nil
	case err != nil:
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sha := lines[len(lines)-1]
	if !isCommitID(sha) {
		return "", fmt.Errorf("unexpected answer from git rev-parse: %q", out)
	}
	return sha, nil
}

// isCommitID reports whether s is a full object id, SHA-1 or SHA-256.
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// headStamp is what the files that say where HEAD is look like: HEAD
// itself, the loose ref it names (and any ref that one names in turn),
// packed-refs when that ref is not loose, and the reftable's tables.list.
// git rewrites each of them (a new file renamed into place) whenever HEAD
// moves: a commit, a checkout, a reset, update-ref, pack-refs. Equal stamps
// taken before and after git reads HEAD tie that commit to them. ok is
// false when something is odd (a symlinked ref, a ref name git would
// refuse, a read error): then no answer is kept and git is asked each time.
type headStamp struct {
	files []fileStamp
	ok    bool
}

// fileStamp is one file as a stamp sees it: its content when it is one of
// the small files that name a ref or a commit, and its identity (inode,
// size, times; see statID) for packed-refs, which can be large.
type fileStamp struct {
	path    string
	missing bool
	content string
	id      fileID
}

// maxRefFile bounds what is read of HEAD, a loose ref or tables.list; a
// longer one is odd, and not kept.
const maxRefFile = 4 << 10

// maxSymrefDepth is git's own bound on a chain of symbolic refs.
const maxSymrefDepth = 5

// packedRecent is how recently packed-refs may have changed and still be
// trusted by its stamp: a file rewritten twice within one tick of the
// file system's clock, at the same size, could look the same.
const packedRecent = 2 * time.Second

func stampHead(gitDir, common string) headStamp {
	if gitDir == "" {
		return headStamp{}
	}
	if common == "" {
		common = gitDir
	}
	var s headStamp
	add := func(path string, content bool) (fileStamp, bool) {
		f, ok := stampFile(path, content)
		s.files = append(s.files, f)
		return f, ok
	}
	for _, dir := range dedupe(gitDir, common) {
		if _, ok := add(filepath.Join(dir, "reftable", "tables.list"), true); !ok {
			return s
		}
	}
	f, ok := add(filepath.Join(gitDir, "HEAD"), true)
	for range maxSymrefDepth {
		if !ok || f.missing {
			return s
		}
		name, sym := strings.CutPrefix(f.content, "ref: ")
		if !sym {
			s.ok = true // a commit id: the chain ends here
			return s
		}
		name = strings.TrimSpace(name)
		if !plainRefName(name) {
			return s
		}
		dir := common
		if perWorktreeRef(name) {
			dir = gitDir
		}
		if f, ok = add(filepath.Join(dir, filepath.FromSlash(name)), true); ok && f.missing {
			// Not loose: packed, or not yet born.
			p, ok := add(filepath.Join(common, "packed-refs"), false)
			s.ok = ok && (p.missing || time.Since(p.id.changed()) > packedRecent)
			return s
		}
	}
	return s
}

func dedupe(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

// stampFile stamps path: with content, the file's first maxRefFile bytes
// (a longer file is not ok); without, its identity. A symlink, or any
// error but the file not being there, is not ok.
func stampFile(path string, content bool) (fileStamp, bool) {
	f := fileStamp{path: path}
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		f.missing = true
		return f, true
	}
	if err != nil || !fi.Mode().IsRegular() {
		return f, false
	}
	f.id, _ = statID(fi)
	if !content {
		return f, f.id != (fileID{})
	}
	// Swapped for a FIFO since the Lstat, it must not block the open.
	file, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return f, false
	}
	defer file.Close()
	if fi, err := file.Stat(); err != nil || !fi.Mode().IsRegular() {
		return f, false
	}
	b, err := io.ReadAll(io.LimitReader(file, maxRefFile+1))
	if err != nil || len(b) > maxRefFile {
		return f, false
	}
	f.content = string(b)
	return f, true
}

// plainRefName reports whether name is a ref under refs/ that names a
// file inside the git directory: what git itself accepts for HEAD.
func plainRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.HasSuffix(name, "/") || strings.ContainsAny(name, "\\\x00 ~^:?*[") {
		return false
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") {
			return false
		}
	}
	return true
}

// perWorktreeRef reports whether a ref lives in a worktree's own git
// directory rather than the common one.
func perWorktreeRef(name string) bool {
	for _, p := range []string{"refs/bisect/", "refs/worktree/", "refs/rewritten/"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
