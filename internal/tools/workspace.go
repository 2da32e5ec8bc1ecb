package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrOutside is wrapped by every error about a path that leads out of the
// checkout: "..", an absolute path elsewhere, or a symlink pointing away.
var ErrOutside = errors.New("outside the workspace")

// ErrDenied is wrapped by every error about a file on the deny-list: the
// file may hold secrets and is never read, listed or searched.
var ErrDenied = errors.New("denied (may hold secrets)")

// ErrNotRegular is wrapped when a path names a directory, a FIFO, a device
// or a socket: only regular files are read.
var ErrNotRegular = errors.New("not a regular file")

// WorkspaceOptions configures NewWorkspace. The zero value is the usual
// setting: the default deny-list and no logging.
type WorkspaceOptions struct {
	// Deny holds extra patterns (see DefaultDeny for the syntax), applied
	// after the defaults, so "!x.pem" can re-allow a default.
	Deny []string
	// NoDefaultDeny drops DefaultDeny; only Deny applies.
	NoDefaultDeny bool
	// FilesTTL bounds how long the result of Files is reused while the git
	// index and HEAD are unchanged; new untracked files show up after at
	// most this long. Zero means 10s; negative disables the cache.
	FilesTTL time.Duration
	// GitDir, when set, is the git directory of a worktree the caller
	// created and checked itself (askrepo's own worktrees under its data
	// directory, whose .git file points into a clone it made); it is used
	// as is, with the checkout as the work tree. Otherwise the checkout's
	// repository is found once, on first use, and must be its own: a real
	// .git directory in the checkout or in a directory above it.
	GitDir string
	// Owned says the checkout is a worktree the caller checked out
	// itself and nothing else writes (askrepo's own, under its data
	// directory): its files are listed from git's index without looking
	// for untracked files or checking each tracked one on disk. Never set
	// it for someone else's directory.
	Owned bool
	// SecretsDir is where the secret blobs of each repository are kept
	// between processes, so a fresh process (a CLI call, a restarted
	// service) walks only the history it has not seen; "" keeps them in
	// this process only. It must be private to the service; it is made
	// when missing, but not its parent (nothing is kept without one).
	SecretsDir string
	Logger     *slog.Logger
}

// Workspace is the wall between the model and the host: every path the
// model gives is resolved relative to one checkout and every file is opened
// through an os.Root, so "..", absolute paths elsewhere, symlinks leading out
// and a swap between check and open are all refused by the kernel-facing
// code rather than by string checks. On top of that it refuses a deny-list
// of secret files inside the checkout.
//
// A Workspace is safe for concurrent use.
type Workspace struct {
	dir  string // absolute, cleaned, as given
	real string // dir with symlinks resolved: what /proc and EvalSymlinks report
	root *os.Root
	deny denyList
	// denyKey is the deny-list's patterns, one a line (see DenyKey).
	denyKey string
	ttl     time.Duration
	log     *slog.Logger

	// procFD says whether /proc/self/fd can name an open file; when it
	// cannot, the path is resolved link by link instead.
	procFD bool

	// lock (a channel of one, so waiting for it can end with a context)
	// guards files: one listing runs at a time, and the others
	// wait for its result rather than running their own.
	lock  chan struct{}
	files *filesCache

	// secrets caches the blobs that were ever at a denied path; it has
	// its own lock, held while git builds the set.
	secrets secretCache
	// staged caches which tracked files' index blobs are secret ones.
	staged stagedCache

	gitDir     string // WorkspaceOptions.GitDir
	secretsDir string // WorkspaceOptions.SecretsDir, absolute
	owned      bool   // WorkspaceOptions.Owned
	gitMu      sync.Mutex
	warm       func()   // stops the listing Warm started (under gitMu)
	repo       *gitRepo // nil until Git first answers
}

// NewWorkspace opens dir (which must exist and be a directory) as the root
// of every later access.
func NewWorkspace(dir string, opts WorkspaceOptions) (*Workspace, error) {
	if dir == "" {
		return nil, errors.New("workspace: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", abs, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", abs)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", abs, err)
	}
	patterns := opts.Deny
	if !opts.NoDefaultDeny {
		patterns = append(append([]string(nil), DefaultDeny...), opts.Deny...)
	}
	deny, err := parseDeny(patterns)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", abs, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", abs, err)
	}
	ttl := opts.FilesTTL
	if ttl == 0 {
		ttl = 10 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Workspace{
		dir:     abs,
		real:    real,
		root:    root,
		deny:    deny,
		denyKey: strings.Join(patterns, "\n"),
		ttl:     ttl,
		log:     log.With("component", "workspace"),
		lock:    make(chan struct{}, 1),
		owned:   opts.Owned,
	}
	if opts.GitDir != "" {
		if w.gitDir, err = filepath.Abs(opts.GitDir); err != nil {
			root.Close()
			return nil, fmt.Errorf("workspace %s: git dir: %w", abs, err)
		}
	}
	if opts.SecretsDir != "" {
		if w.secretsDir, err = filepath.Abs(opts.SecretsDir); err != nil {
			root.Close()
			return nil, fmt.Errorf("workspace %s: secrets dir: %w", abs, err)
		}
	}
	if fi, err := os.Stat("/proc/self/fd"); err == nil && fi.IsDir() {
		w.procFD = true
	}
	return w, nil
}

// Dir returns the absolute, cleaned checkout path.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the root directory handle.
func (w *Workspace) Close() error {
	w.gitMu.Lock()
	stop := w.warm
	w.gitMu.Unlock()
	if stop != nil {
		stop() // a listing Warm started ends before the root closes
	}
	return w.root.Close()
}

// DenyKey names the deny-list the workspace applies: two workspaces with
// the same key refuse the same paths. What was read through the wall
// under one deny-list (a saved code index) is not what it gives under
// another: a grown list can deny the target of a symlink read then.
func (w *Workspace) DenyKey() string { return w.denyKey }

// Denied reports whether rel (relative to the checkout, slash-separated)
// is on the deny-list, itself or through a parent directory.
func (w *Workspace) Denied(rel string) bool {
	return w.deny.denied(path.Clean(rel))
}

// Rel turns a path from the model into a clean, slash-separated path
// relative to the checkout ("." for the root). It accepts relative paths
// and absolute paths inside Dir(); the check is lexical (Open is what
// enforces the wall), so it gives an early, friendly error.
func (w *Workspace) Rel(p string) (string, error) {
	rel, err := w.lexical(p)
	if err != nil {
		return "", err
	}
	if w.deny.denied(rel) {
		return "", deniedError(p)
	}
	return rel, nil
}

func (w *Workspace) lexical(p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("path %q contains a NUL byte; give a plain path relative to the repository root", p)
	}
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		for _, base := range []string{w.dir, w.real} {
			if c == base {
				return ".", nil
			}
			if prefix := strings.TrimSuffix(base, string(filepath.Separator)) + string(filepath.Separator); strings.HasPrefix(c, prefix) {
				return filepath.ToSlash(c[len(prefix):]), nil
			}
		}
		return "", outsideError(p)
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == "." {
		return ".", nil
	}
	if !filepath.IsLocal(filepath.FromSlash(c)) {
		return "", outsideError(p)
	}
	return c, nil
}

func outsideError(p string) error {
	return fmt.Errorf("%w: %q; give a path relative to the repository root, such as \"README.md\" or \"src/main.go\"", ErrOutside, p)
}

func deniedError(p string) error {
	return fmt.Errorf("%w: %q is on the deny-list of secret files and is never shown; answer without it", ErrDenied, p)
}

// Open opens a regular file for reading through the root. rel is resolved
// as by Rel. Directories, FIFOs, devices and sockets are refused without
// blocking (ErrNotRegular), as are deny-listed files, also when reached
// through a symlink (ErrDenied), and anything leading out of the checkout
// (ErrOutside). A missing file gives an error wrapping fs.ErrNotExist.
func (w *Workspace) Open(rel string) (*os.File, fs.FileInfo, error) {
	r, err := w.Rel(rel)
	if err != nil {
		return nil, nil, err
	}
	if r == "." {
		return nil, nil, fmt.Errorf("%q is the repository root, a directory: %w; use list_files to see what it holds", rel, ErrNotRegular)
	}
	f, err := w.root.OpenFile(r, openFlags, 0)
	if err != nil {
		return nil, nil, w.openError(r, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat %s: %w", r, err)
	}
	// The name given may be a symlink to a denied file ("notes.txt" ->
	// ".env"): check the path of what was actually opened.
	opened, err := w.openedPath(f, r)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if opened != r && w.deny.denied(opened) {
		f.Close()
		return nil, nil, deniedError(rel)
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, nil, fmt.Errorf("%s is a directory: %w; use list_files with path=%q to see what it holds", r, ErrNotRegular, r)
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, nil, fmt.Errorf("%s is a %s: %w; only regular files can be read", r, fileKind(fi.Mode()), ErrNotRegular)
	}
	return f, fi, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}

// openError turns an error from the root into one the model can act on.
// The root's own escape error is unexported, so an escape is recognised by
// resolving the path link by link, not by matching its text.
func (w *Workspace) openError(rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
	}
	if _, rerr := w.resolve(rel); errors.Is(rerr, ErrOutside) {
		return fmt.Errorf("%w: %q leads out of the repository through a symlink", ErrOutside, rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("open %s: %w", rel, err)
}

// openedPath returns the path, relative to the checkout, of the file f
// that was opened as rel. On Linux /proc names the very file opened, so no
// race can slip a different file past the deny check; elsewhere, or when the
// kernel reports a path that is not under the checkout (a bind mount), the
// links are resolved one by one through the root.
func (w *Workspace) openedPath(f *os.File, rel string) (string, error) {
	if w.procFD {
		if target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil {
			if target == w.real {
				return ".", nil
			}
			prefix := strings.TrimSuffix(w.real, "/") + "/"
			if strings.HasPrefix(target, prefix) {
				return target[len(prefix):], nil
			}
		}
	}
	return w.resolve(rel)
}

// maxLinkHops matches the kernel's limit on symlinks in one resolution.
const maxLinkHops = 40

// resolve follows the symlinks in rel through the root and returns the
// path with none left. A link that is absolute or climbs above the root
// gives ErrOutside (os.Root would refuse to follow it). A component that
// does not exist ends resolution; the rest is taken literally.
func (w *Workspace) resolve(rel string) (string, error) {
	pending := strings.Split(rel, "/")
	var done []string
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", ErrOutside
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(append(done, c)...)
		fi, err := w.root.Lstat(cur)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			if err != nil {
				rest := path.Join(append(done, pending...)...)
				if !filepath.IsLocal(rest) {
					return "", ErrOutside
				}
				return rest, nil
			}
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", fmt.Errorf("%s: too many levels of symbolic links", rel)
		}
		target, err := w.root.Readlink(cur)
		if err != nil {
			return "", fmt.Errorf("readlink %s: %w", cur, err)
		}
		if filepath.IsAbs(target) {
			return "", ErrOutside
		}
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}
