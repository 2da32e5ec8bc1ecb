package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/askrepo/askrepo/internal/gitexec"
)

// ErrForeignGitDir is wrapped when the repository git would use for a
// checkout is not the checkout's own: a .git file or symlink pointing
// elsewhere, a work tree set elsewhere, or a git directory borrowing
// another's refs or objects. Git history is then off for that checkout,
// and files are listed by walking the directory.
var ErrForeignGitDir = errors.New("the checkout's git directory is not its own")

// gitRepo is the checkout's repository as resolved once: a runner pinned
// to it, or why git is off for this checkout.
type gitRepo struct {
	git gitexec.Git
	err error
	// realGitDir is git.GitDir with symlinks resolved, for the checks
	// repeated on every call.
	realGitDir string

	// layout says that prefix and common are known: where the checkout
	// sits in the repository ("" at its top, "sub/dir/" below it) and the
	// repository's common git directory. Resolving them once saves a git
	// process on every later tool call.
	layout         bool
	prefix, common string
	// transient says that err is not an answer about the repository (git
	// timed out, could not read it, or said something unexpected): it is
	// not kept, and the next call asks again. Meanwhile the tools fail
	// closed on content, as they do whenever the history is unknown.
	transient bool

	// origin is remote.origin.url as the config said when the repository
	// was resolved, read by the same git call as its drivers.
	origin string
	// head is what GitHead knows of HEAD (guarded by gitMu); resolving
	// the repository fills it when it can tell the layout's answer holds.
	head *headMemo
}

// errGitUnavailable is wrapped when git could not say what the checkout's
// repository is, for a reason that may pass.
var errGitUnavailable = errors.New("git could not read the checkout's repository just now; try again in a moment")

// gitLayout returns the checkout's place in its repository and the
// repository's common git directory, as resolved once; ok is false when
// git is off for the checkout or they are not known.
func (w *Workspace) gitLayout(ctx context.Context) (prefix, common string, ok bool) {
	if _, err := w.Git(ctx); err != nil {
		return "", "", false
	}
	w.gitMu.Lock()
	defer w.gitMu.Unlock()
	return w.repo.prefix, w.repo.common, w.repo.layout
}

// GitPrefix is where the checkout sits in its repository: "" at its top,
// "sub/dir/" below it; ok is false when git is off for the checkout.
func (w *Workspace) GitPrefix(ctx context.Context) (prefix string, ok bool) {
	prefix, _, ok = w.gitLayout(ctx)
	return prefix, ok
}

// Git returns the hardened git runner for the checkout, with --git-dir and
// --work-tree pinned to its own repository, so no later call re-discovers
// it. The repository is found and checked on the first call (see
// WorkspaceOptions.GitDir); later calls return the same answer. The error
// wraps ErrNotGitRepo when the checkout is in no repository, and
// ErrForeignGitDir when the one git would use is refused.
func (w *Workspace) Git(ctx context.Context) (gitexec.Git, error) {
	w.gitMu.Lock()
	defer w.gitMu.Unlock()
	if w.repo == nil {
		r := w.resolveGit(ctx)
		// A canceled call says nothing about the repository: ask again.
		if err := ctx.Err(); err != nil {
			return gitexec.Git{}, fmt.Errorf("find the checkout's git repository: %w", err)
		}
		if r.transient {
			return gitexec.Git{}, r.err
		}
		w.repo = &r
	}
	if w.repo.err == nil && w.gitDir == "" {
		// The checkout is someone else's directory and may change under
		// us: a .git directory swapped for a file or symlink after the
		// check would redirect even an explicit --git-dir. One lstat per
		// call keeps the check true.
		if fi, err := os.Lstat(w.repo.git.GitDir); err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
			w.log.Warn("git history is off for this checkout: its .git changed after it was checked", "dir", w.dir)
			w.repo = &gitRepo{err: fmt.Errorf("%w: its .git was replaced after the checkout was opened; git history is off for this checkout", ErrForeignGitDir)}
		} else if reason := borrowsObjects(w.repo.git.GitDir, w.repo.realGitDir, false); reason != "" {
			// The same holds for where its objects come from: the
			// deep walk is done once, these few reads every call.
			w.log.Warn("git history is off for this checkout: its objects changed after it was checked", "dir", w.dir, "reason", reason)
			w.repo = &gitRepo{err: fmt.Errorf("%w: %s since the checkout was opened; git history is off for this checkout", ErrForeignGitDir, reason)}
		}
	}
	return w.repo.git, w.repo.err
}

// base is the runner for this checkout before its repository is known.
// The checkout was configured by the operator and is trusted to be read
// whoever owns it (every setting that could run a program is overridden
// anyway), as the container image does with safe.directory '*'.
func (w *Workspace) gitBase() gitexec.Git {
	return gitexec.Git{Dir: w.dir, Config: [][2]string{{"safe.directory", "*"}}, AllocLimit: gitAllocLimit}
}

// gitAllocLimit bounds each allocation of the git the tools run (see
// gitexec.Git.AllocLimit): no answer needs a blob over 256 MB in memory,
// and git's largest array of its own, the object hash, stays under it up
// to 16M objects.
const gitAllocLimit = 256 << 20

// givenGit is the repository of a worktree the caller made (see
// WorkspaceOptions.GitDir): the checkout is its top, and its commondir
// file names the repository it belongs to.
func (w *Workspace) givenGit() gitRepo {
	g := w.gitBase()
	g.GitDir, g.WorkTree = w.gitDir, w.dir
	r := gitRepo{git: g}
	if b, err := os.ReadFile(filepath.Join(w.gitDir, "commondir")); err == nil {
		common := strings.TrimSpace(string(b))
		if !filepath.IsAbs(common) {
			common = filepath.Join(w.gitDir, common)
		}
		r.layout, r.common = true, filepath.Clean(common)
	}
	return r
}

func (w *Workspace) resolveGit(ctx context.Context) gitRepo {
	if w.gitDir != "" {
		return w.givenGit()
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	// HEAD is read by the same call (see GitHead): the files that say
	// where it is are stamped before and after, in the git directory git
	// is expected to find, and kept when that is the one it found.
	guess := guessGitDir(w.real)
	before := stampHead(guess, guess)
	config := w.readConfig(ctx, guess)
	cmd := w.gitBase().Command(ctx, append([]string{"rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel"}, headArgs...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	after := stampHead(guess, guess)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Count(string(out), "\n") == 3 {
		err = nil // HEAD is at no commit: the layout is all there is
	}
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return gitRepo{err: fmt.Errorf("git is not installed on the server, so git history is not available: %w", err)}
		}
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "not a git repository") || strings.Contains(msg, "must be run in a work tree") {
			// Not in a repository, or in a bare one: no history, and
			// the walker lists the files.
			w.log.Debug("not using git for this checkout", "err", err, "stderr", msg)
			return gitRepo{err: ErrNotGitRepo}
		}
		// A timeout, or a repository git cannot read now: no answer.
		w.log.Warn("git could not read the checkout's repository; asking again at the next call", "dir", w.dir, "err", err, "stderr", msg)
		return gitRepo{err: errGitUnavailable, transient: true}
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 && len(lines) != 4 {
		w.log.Warn("unexpected answer from git rev-parse; asking again at the next call", "out", string(out))
		return gitRepo{err: errGitUnavailable, transient: true}
	}
	gitDir, common, top := lines[0], lines[1], lines[2]
	if reason := w.foreignGitDir(gitDir, common, top); reason != "" {
		w.log.Warn("git history is off for this checkout: its git directory is not its own; files are listed without git",
			"dir", w.dir, "reason", reason, "git_dir", gitDir, "work_tree", top)
		return gitRepo{err: fmt.Errorf("%w: %s; git history is off for this checkout (the operator can point askrepo at the repository itself)", ErrForeignGitDir, reason)}
	}
	real, err := filepath.EvalSymlinks(gitDir)
	if err != nil {
		return gitRepo{err: errGitUnavailable, transient: true}
	}
	// foreignGitDir has made sure that the git directory and the common
	// one are the same real directory: the one stamped, and whose config
	// is being read, if it is the guess.
	if real != guess {
		config = w.readConfig(ctx, real)
	}
	read := <-config
	if read.err != nil {
		w.log.Warn("cannot read the repository's config; asking again at the next call", "dir", w.dir, "err", read.err)
		return gitRepo{err: errGitUnavailable, transient: true}
	}
	g := w.gitBase()
	g.GitDir, g.WorkTree, g.Config = gitDir, top, read.config
	r := gitRepo{git: g, realGitDir: real, common: common, origin: read.origin}
	if real == guess {
		r.head = layoutHead(lines[3:], before, after)
	}
	if realTop, err := filepath.EvalSymlinks(top); err == nil {
		if rel, err := filepath.Rel(realTop, w.real); err == nil && !strings.HasPrefix(rel, "..") {
			r.layout = true
			if rel != "." {
				r.prefix = filepath.ToSlash(rel) + "/"
			}
		}
	}
	return r
}

// configRead is a repository's config as opening it reads it: the
// operator's settings with the repository's drivers switched off (see
// gitexec.Git.WithoutDrivers), and the origin's URL.
type configRead struct {
	config [][2]string
	origin string
	err    error
}

// readConfig reads the config of the git directory gitDir in the
// background ("" reads nothing). The tools' commands run no filter or diff
// driver; should one ever slip in, the drivers the repository defines are
// switched off too. Opening reads the config of the directory git is
// expected to find while git says which it is, and uses it only once that
// directory has passed every check; running git config on a directory
// that fails them runs no program (see gitexec) and is thrown away.
func (w *Workspace) readConfig(ctx context.Context, gitDir string) <-chan configRead {
	ch := make(chan configRead, 1)
	if gitDir == "" {
		return ch
	}
	go func() {
		g := w.gitBase()
		g.GitDir = gitDir
		g, values, err := g.WithoutDriversReading(ctx, "remote.origin.url")
		ch <- configRead{config: g.Config, origin: values["remote.origin.url"], err: err}
	}()
	return ch
}

// guessGitDir is where git is expected to find the repository of the
// checkout real (a real path): the first .git directory at or above it.
// It is a guess, checked against git's answer; "" when there is none.
func guessGitDir(real string) string {
	for dir := real; ; dir = filepath.Dir(dir) {
		dotGit := filepath.Join(dir, ".git")
		if fi, err := os.Lstat(dotGit); err == nil {
			if fi.IsDir() {
				return dotGit
			}
			return ""
		}
		if parent := filepath.Dir(dir); parent == dir {
			return ""
		}
	}
}

// GitOrigin is the URL of the repository's origin remote, as its config
// said when the checkout's repository was resolved; "" when it has none or
// git is off for the checkout. It is read with the repository's drivers,
// by the same git call.
func (w *Workspace) GitOrigin(ctx context.Context) string {
	if _, err := w.Git(ctx); err != nil {
		return ""
	}
	w.gitMu.Lock()
	defer w.gitMu.Unlock()
	return w.repo.origin
}

// foreignGitDir says why the repository git found for the checkout is not
// the checkout's own, or "" when it is: the work tree must be the checkout
// or a directory above it, and its .git a real directory that is the git
// directory, holding its own refs and objects. A path repo is someone
// else's directory, and a .git file ("gitdir: /elsewhere/.git"), a .git
// symlink, core.worktree, a commondir file or an alternates file could
// otherwise show the model another repository of the host. The text names
// no host path: it reaches the model.
func (w *Workspace) foreignGitDir(gitDir, common, top string) string {
	realTop, err := filepath.EvalSymlinks(top)
	if err != nil {
		return "its work tree cannot be resolved"
	}
	if realTop != w.real && !strings.HasPrefix(w.real, strings.TrimSuffix(realTop, "/")+"/") {
		return "git's work tree for it is a directory that does not contain the checkout"
	}
	dotGit := filepath.Join(realTop, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case err != nil:
		return "its repository has no .git directory at its top"
	case fi.Mode()&fs.ModeSymlink != 0:
		return "its .git is a symlink to another directory"
	case !fi.IsDir():
		return "its .git is a file that points git at a repository elsewhere"
	}
	for _, d := range []string{gitDir, common} {
		if real, err := filepath.EvalSymlinks(d); err != nil || real != dotGit {
			return "its git directory takes its refs or objects from another repository"
		}
	}
	return borrowsObjects(dotGit, dotGit, true)
}

// borrowsObjects says how the git directory gitDir (realGitDir with its
// symlinks resolved) takes objects from another repository, or "": an
// alternates file, or a symlink out of it in its objects directory. deep
// walks all of that directory; otherwise only the directory itself, its
// entries and those of objects/pack are looked at (a few reads), which
// still catches a borrowed object store or pack directory.
func borrowsObjects(gitDir, realGitDir string, deep bool) string {
	// A commondir file makes git take refs and objects from the
	// directory it names; the checkout's own has none.
	if _, err := os.Lstat(filepath.Join(gitDir, "commondir")); err == nil {
		return "its git directory takes its refs and objects from another repository (commondir)"
	}
	objects := filepath.Join(gitDir, "objects")
	if alternates(filepath.Join(objects, "info", "alternates")) {
		return "its git directory borrows objects from another repository (objects/info/alternates)"
	}
	out := false
	if deep {
		out = linksOut(objects, realGitDir)
	} else {
		out = linkOut(objects, realGitDir) || entriesLinkOut(objects, realGitDir) || entriesLinkOut(filepath.Join(objects, "pack"), realGitDir)
	}
	if out {
		return "its git directory takes objects through a symlink from outside it"
	}
	return ""
}

// linkOut says whether p is a symlink that leads out of root.
func linkOut(p, root string) bool {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return false
	}
	real, err := filepath.EvalSymlinks(p)
	return err != nil || (real != root && !strings.HasPrefix(real, root+string(filepath.Separator)))
}

// entriesLinkOut says whether an entry of dir is a symlink that leads out
// of root. A dir that cannot be read has none.
func entriesLinkOut(dir, root string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 && linkOut(filepath.Join(dir, e.Name()), root) {
			return true
		}
	}
	return false
}

// linksOut reports whether dir, or anything below it, is a symlink that
// leads out of root (a real path): .git/objects, or only its pack
// directory, linked to another repository's gives git all of that
// repository's objects, and any ref naming one of them shows its history.
// The walk reads directory entries only, no file, and follows no link.
func linksOut(dir, root string) bool {
	out := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil || (real != root && !strings.HasPrefix(real, root+string(filepath.Separator))) {
			out = true
			return fs.SkipAll
		}
		return nil
	})
	return out || err != nil
}

// alternates reports whether an alternates file lists any directory.
func alternates(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" && !strings.HasPrefix(l, "#") {
			return true
		}
	}
	return s.Err() != nil
}
