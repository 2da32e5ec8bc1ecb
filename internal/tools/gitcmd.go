package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec"
)

// DefaultGitTimeout bounds one call of a git history tool, all of its git
// commands together. On a 57k-commit repository a pickaxe search over the
// whole history takes about 0.7 s and a blame 0.4 s, so ten seconds only
// trips on a pathological query.
const DefaultGitTimeout = 10 * time.Second

// ErrNotGitRepo is returned by the git history tools when the checkout is
// not inside a git repository. The tools can still be built and registered
// over such a checkout; they answer every call with this error.
var ErrNotGitRepo = errors.New("this checkout is not a git repository; git history is not available")

// GitOptions configures the git history tools, git_log, git_show and
// git_blame (Options.Git). The zero value gives the defaults.
type GitOptions struct {
	// Timeout bounds one tool call. Zero means DefaultGitTimeout.
	Timeout time.Duration
	// Binary is the git executable, looked up in PATH when it has no
	// slash. Empty means "git".
	Binary string
	// CheckOwnership keeps git's refusal of a repository owned by another
	// user. System and global config are never read, so no safe.directory
	// setting can lift the refusal; set it only when the service runs as
	// the checkout's owner. By default the checkout the service was
	// configured with is trusted, as the container image does with
	// safe.directory '*': every setting of the repository that could run
	// a program is overridden on the command line anyway.
	CheckOwnership bool
}

func (o GitOptions) withDefaults() GitOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultGitTimeout
	}
	if o.Binary == "" {
		o.Binary = "git"
	}
	return o
}

// gitCLI runs read-only git commands in the checkout's own repository
// (Workspace.Git) through gitexec, whose configuration cannot run a
// program; the commands themselves keep to ones that run no filter or
// diff driver (--no-textconv, --no-ext-diff, cat-file without --filters).
// It is safe for concurrent use.
type gitCLI struct {
	ws   *Workspace
	opts GitOptions

	ownerMu  sync.Mutex
	ownerErr error // CheckOwnership's verdict, once known
	ownerOK  bool
}

func newGitCLI(ws *Workspace, opts GitOptions) *gitCLI {
	return &gitCLI{ws: ws, opts: opts.withDefaults()}
}

// errStopReading tells run that the consumer has what it needs: git is
// killed and the call counts as a success.
var errStopReading = errors.New("stop reading")

// gitRun is one git invocation.
type gitRun struct {
	args  []string // git's arguments, after the ones gitexec adds
	stdin string
	// config is set for this call, over the repository's and the
	// operator's settings.
	config [][2]string
	// read consumes stdout. Returning errStopReading kills git and ends
	// the call without error; any other error kills git and is returned.
	read func(io.Reader) error
}

// stderrLimit keeps enough of git's complaints to explain a failure.
const stderrLimit = 4 << 10

// run executes one git command in the checkout. git is killed when ctx
// ends or the reader stops early, so a runaway log or an oversized blob
// never holds the call.
func (g *gitCLI) run(ctx context.Context, r gitRun) error {
	if err := ctx.Err(); err != nil {
		return g.ctxError(r.args, err)
	}
	git, err := g.ws.Git(ctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return g.ctxError(r.args, cerr)
		}
		return err
	}
	if err := g.checkOwner(ctx); err != nil {
		return err
	}
	git.Binary = g.opts.Binary
	if len(r.config) > 0 {
		git.Config = append(slices.Clip(git.Config), r.config...)
	}
	cctx, kill := context.WithCancel(ctx)
	defer kill()
	cmd := git.Command(cctx, r.args...)
	cmd.WaitDelay = time.Second
	if r.stdin != "" {
		cmd.Stdin = strings.NewReader(r.stdin)
	}
	stderr := &gitStderrBuffer{max: stderrLimit}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("git %s: %w", r.args[0], err)
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("git is not installed on the server, so git history is not available: %w", err)
		}
		return fmt.Errorf("start git %s: %w", r.args[0], err)
	}
	rerr := r.read(stdout)
	if rerr != nil {
		kill()
	}
	// Drain what the reader left so git is not blocked on a full pipe
	// while Wait waits for it.
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if err := ctx.Err(); err != nil {
		return g.ctxError(r.args, err)
	}
	switch {
	case errors.Is(rerr, errStopReading):
		return nil
	case rerr != nil:
		return rerr
	case werr != nil:
		return g.commandError(r.args, werr, stderr.String())
	}
	return nil
}

// checkOwner keeps git's refusal of a repository another user owns when
// GitOptions.CheckOwnership asks for it. The calls themselves name the
// git directory explicitly, which git does not check, so the check is
// git's own discovery, run once.
func (g *gitCLI) checkOwner(ctx context.Context) error {
	if !g.opts.CheckOwnership {
		return nil
	}
	g.ownerMu.Lock()
	defer g.ownerMu.Unlock()
	if g.ownerOK || g.ownerErr != nil {
		return g.ownerErr
	}
	cmd := gitexec.Git{Binary: g.opts.Binary, Dir: g.ws.Dir()}.Command(ctx, "rev-parse", "--git-dir")
	stderr := &gitStderrBuffer{max: stderrLimit}
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return g.ctxError([]string{"rev-parse"}, cerr)
		}
		g.ownerErr = g.commandError([]string{"rev-parse"}, err, stderr.String())
		return g.ownerErr
	}
	g.ownerOK = true
	return nil
}

// output runs git and returns at most limit bytes of its stdout; truncated
// says git had more to say and was stopped.
func (g *gitCLI) output(ctx context.Context, limit int, args ...string) (out []byte, truncated bool, err error) {
	err = g.run(ctx, gitRun{args: args, read: func(r io.Reader) error {
		var rerr error
		out, rerr = io.ReadAll(io.LimitReader(r, int64(limit)+1))
		if rerr != nil {
			return fmt.Errorf("read git %s output: %w", args[0], rerr)
		}
		if len(out) > limit {
			out, truncated = out[:limit], true
			return errStopReading
		}
		return nil
	}})
	return out, truncated, err
}

func (g *gitCLI) ctxError(args []string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("git %s took longer than %s and was stopped; narrow the request (a path, a since date, an author, a smaller line range): %w", args[0], g.opts.Timeout, err)
	}
	return fmt.Errorf("git %s: %w", args[0], err)
}

// commandError turns a failed git into an error the model can act on.
// Git's messages are matched as text, which LC_ALL=C keeps stable; host
// paths in them are replaced so none reaches a Slack thread.
func (g *gitCLI) commandError(args []string, err error, stderr string) error {
	msg := g.scrub(strings.TrimSpace(stderr))
	switch {
	case strings.Contains(msg, "not a git repository"):
		return ErrNotGitRepo
	case strings.Contains(msg, "dubious ownership"):
		return errors.New("git refuses this checkout because another user owns it; git history is not available (the operator can unset GitOptions.CheckOwnership)")
	case strings.Contains(msg, "attempting to allocate") && strings.Contains(msg, "over limit"):
		return errors.New("git stopped: a file it had to read here is larger than the 256 MB git may load; ask about another path, or a history that does not touch that file (a path or a since date)")
	case strings.Contains(msg, "does not have any commits yet"):
		return errors.New("the repository has no commits yet, so there is no history to show")
	}
	return &gitExitError{cmd: args[0], stderr: msg, err: err}
}

// gitExitError is a git command that ran and failed for a reason not
// mapped to a sentence of its own.
type gitExitError struct {
	cmd    string
	stderr string // scrubbed
	err    error
}

func (e *gitExitError) Error() string {
	if e.stderr == "" {
		return fmt.Sprintf("git %s failed: %v", e.cmd, e.err)
	}
	return fmt.Sprintf("git %s failed: %s", e.cmd, gitFirstLines(e.stderr, 4))
}

func (e *gitExitError) Unwrap() error { return e.err }

// scrub removes the checkout's host path from git's messages.
func (g *gitCLI) scrub(s string) string {
	dirs := []string{g.ws.real, g.ws.dir}
	if git, err := g.ws.Git(context.Background()); err == nil {
		// The top of the repository, when the checkout is below it.
		dirs = append(dirs, git.GitDir, git.WorkTree)
	}
	if _, common, ok := g.ws.gitLayout(context.Background()); ok {
		// A worktree's repository, which holds its objects.
		dirs = append(dirs, common)
	}
	// The longest first, so a path inside another is taken whole.
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		s = strings.ReplaceAll(s, dir+"/", "")
		s = strings.ReplaceAll(s, dir, ".")
	}
	return s
}

func gitFirstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "; ")
}

// prefix asks git where the checkout sits in its repository ("" at the
// top, "sub/dir/" below it) and, by succeeding, that it is one at all.
// Paths in diffstats and pathspecs are made relative to the checkout, so a
// checkout below the top sees only its own part of the history.
func (g *gitCLI) prefix(ctx context.Context) (string, error) {
	if p, _, ok := g.ws.gitLayout(ctx); ok && !g.opts.CheckOwnership {
		return p, nil
	}
	out, _, err := g.output(ctx, 4096, "rev-parse", "--show-prefix")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// resolveCommit turns a validated ref into a full commit sha. Every later
// command gets the sha, never the model's text.
func (g *gitCLI) resolveCommit(ctx context.Context, ref string) (string, error) {
	if err := checkRef(ref); err != nil {
		return "", err
	}
	out, _, err := g.output(ctx, 4096, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	sha := strings.TrimSpace(string(out))
	var ge *gitExitError
	switch {
	case errors.As(err, &ge) && strings.Contains(ge.stderr, "ambiguous"):
		return "", fmt.Errorf("commit %q is ambiguous: more than one object starts with it; give more characters of the sha", ref)
	case err != nil && ge == nil:
		return "", err
	case err != nil || !isCommitSHA(sha):
		return "", fmt.Errorf("no commit named %q in this repository; use a sha from git_log (at least 7 characters), a branch or tag name, or HEAD~N", ref)
	}
	return sha, nil
}

func isCommitSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// gitStderrBuffer keeps the first max bytes written and drops the rest, so a
// chatty stderr cannot grow without bound.
type gitStderrBuffer struct {
	buf bytes.Buffer
	max int
}

func (c *gitStderrBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *gitStderrBuffer) String() string { return c.buf.String() }
