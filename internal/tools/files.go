package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
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

type gitState struct {
	checked bool
	gitDir  string // absolute git dir, "" when the checkout is not in a git repository
}

type filesCache struct {
	list []string
	key  string
	at   time.Time
}

// Files returns every listable regular file and symlink in the checkout as
// sorted, slash-separated relative paths, without deny-listed ones. In a git
// checkout it is exactly what git shows (tracked files plus untracked ones
// that are not ignored, honouring nested .gitignore, .git/info/exclude and
// the user's excludes file); tracked files deleted from disk are dropped.
// Otherwise a walk skips SkipDirs. Symlinked directories are listed as
// entries, never entered.
//
// The result is cached while the git index and HEAD are unchanged, for at
// most WorkspaceOptions.FilesTTL. The returned slice is the caller's.
func (w *Workspace) Files(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.git.checked {
		w.git.gitDir = w.findGitDir(ctx)
		// A canceled call says nothing about the repository: ask again.
		w.git.checked = ctx.Err() == nil
	}
	key := w.cacheKey()
	if c := w.files; c != nil && w.ttl > 0 && c.key == key && time.Since(c.at) < w.ttl {
		return slices.Clone(c.list), nil
	}
	var list []string
	var err error
	if w.git.gitDir != "" {
		list, err = w.gitFiles(ctx)
		if err != nil && ctx.Err() == nil {
			w.log.Warn("git ls-files failed; walking the directory instead", "err", err)
			list, err = w.walkFiles(ctx)
		}
	} else {
		list, err = w.walkFiles(ctx)
	}
	if err != nil {
		return nil, err
	}
	w.files = &filesCache{list: list, key: key, at: time.Now()}
	return slices.Clone(list), nil
}

// gitCommand prepares a git call in the checkout that reads no system
// config, never prompts, takes no lock, and ignores a GIT_DIR the service
// itself may have inherited.
func (w *Workspace) gitCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = w.dir
	env := make([]string, 0, len(os.Environ())+3)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CEILING_DIRECTORIES":
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	cmd.WaitDelay = time.Second
	return cmd
}

// findGitDir asks git for the repository holding the checkout; the checkout
// may be a subdirectory of it. Any failure (not a repository, git missing,
// an ownership refusal) means "walk instead".
func (w *Workspace) findGitDir(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	out, err := w.gitCommand(ctx, "rev-parse", "--absolute-git-dir").Output()
	if err != nil {
		w.log.Debug("not using git for the file list", "err", err)
		return ""
	}
	return strings.TrimSpace(string(out))
}

// cacheKey changes when a commit, checkout, pull or add rewrites the index
// or moves HEAD.
func (w *Workspace) cacheKey() string {
	if w.git.gitDir == "" {
		return ""
	}
	var b strings.Builder
	if fi, err := os.Stat(filepath.Join(w.git.gitDir, "index")); err == nil {
		b.WriteString(strconv.FormatInt(fi.ModTime().UnixNano(), 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(fi.Size(), 10))
	}
	if head, err := os.ReadFile(filepath.Join(w.git.gitDir, "HEAD")); err == nil {
		b.WriteByte(' ')
		b.Write(bytes.TrimSpace(head))
	}
	return b.String()
}

func (w *Workspace) gitFiles(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := w.gitCommand(ctx, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("list files: %w", ctx.Err())
		}
		return nil, fmt.Errorf("git ls-files: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	names := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	slices.Sort(names)
	names = slices.Compact(names) // a conflicted file is listed once per stage
	list := names[:0]
	for _, n := range names {
		if n == "" || w.deny.denied(n) {
			continue
		}
		// Drop tracked files deleted from disk, and submodules (directories).
		fi, err := os.Lstat(filepath.Join(w.dir, filepath.FromSlash(n)))
		if err != nil || !(fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0) {
			continue
		}
		list = append(list, n)
	}
	return list, nil
}

// walkFiles lists the checkout without git. fs.WalkDir on the root's FS
// reports symlinks as entries and never follows them.
func (w *Workspace) walkFiles(ctx context.Context) ([]string, error) {
	var list []string
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
			if slices.Contains(SkipDirs, d.Name()) || w.deny.denied(p) {
				return fs.SkipDir
			}
			return nil
		}
		if (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) && !w.deny.denied(p) {
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
