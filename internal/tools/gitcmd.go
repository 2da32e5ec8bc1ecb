package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

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

// refPattern is what a commit argument may look like: a sha, a branch or
// tag name, HEAD~2, main^2, HEAD@{1}. No spaces, no colon (that names a
// file in a tree), and the leading character is checked separately so
// that nothing can read as an option.
var refPattern = regexp.MustCompile(`^[A-Za-z0-9._/~^@{}-]+$`)

// maxRefLen is far longer than any real ref name.
const maxRefLen = 200

// checkRef validates a commit argument before git sees it.
func checkRef(ref string) error {
	const hint = `give one commit: a sha from git_log such as "1a2b3c4d", a branch or tag name, or HEAD~2`
	switch {
	case ref == "":
		return fmt.Errorf(`"commit" is empty; %s`, hint)
	case len(ref) > maxRefLen:
		return fmt.Errorf(`"commit" is %d characters long; %s`, len(ref), hint)
	case strings.HasPrefix(ref, "-"):
		return fmt.Errorf(`commit %q starts with "-" and would read as an option; %s`, ref, hint)
	case strings.Contains(ref, ".."):
		return fmt.Errorf(`commit %q is a range; ranges are not supported, %s (git_log lists the commits of a history)`, ref, hint)
	case strings.Contains(ref, ":"):
		return fmt.Errorf(`commit %q contains ":"; pass the file as "path" instead, and %s`, ref, hint)
	case !refPattern.MatchString(ref):
		return fmt.Errorf(`commit %q has characters no commit name has (spaces, quotes, *, ?, \); %s`, ref, hint)
	}
	return nil
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

// gitPath puts a model's path through the workspace wall and the
// deny-list and returns it relative to the checkout ("." for all of it).
// Control characters are refused: one line per path is what git's batch
// input and output formats rely on.
func (g *gitCLI) gitPath(p string) (string, error) {
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return "", fmt.Errorf("path %q contains a control character; give a plain path relative to the repository root", p)
	}
	return g.ws.Rel(strings.TrimSpace(p))
}

// literalPathspec makes git take rel as a path, never as pathspec magic
// (":(top)", ":!x") or a glob; it always follows "--".
func literalPathspec(rel string) string { return ":(literal)" + rel }

// denyExcludes renders the deny-list as pathspecs that keep git from
// looking into secret files at all, for searches whose matches would
// otherwise reveal content (a pickaxe hit in .env tells what .env held).
// Re-allowing patterns are left out: excluding too much is the safe side.
// Patterns git's glob cannot express ({a,b}) are left out here and caught
// by filtering the names git reports. icase matches as the deny-list does,
// though git folds ASCII letters only; names that differ from a pattern
// in other letters are caught by the same filtering.
func denyExcludes(d denyList) []string {
	var out []string
	for _, g := range denyGlobs(d) {
		out = append(out, ":(exclude,icase,glob)"+g, ":(exclude,icase,glob)"+g+"/**")
	}
	return out
}

// denyGlobs renders the deny-list's patterns as globs over whole paths
// from the top of the checkout, in git's pathspec syntax, leaving out
// re-allowing ones and those git cannot express ({a,b}).
func denyGlobs(d denyList) []string {
	var out []string
	for _, p := range d {
		if p.negate || strings.ContainsAny(p.glob, "{}") {
			continue
		}
		g := p.glob
		if !p.anchored {
			g = "**/" + g
		}
		out = append(out, g)
	}
	return out
}

// checkText validates a free-text argument (author, grep, pickaxe). It is
// passed to git inside one argv element ("--author=<v>"), so it cannot
// become an option; the checks only keep it one line and of sane size.
func checkText(name, v string) error {
	if len(v) > 200 {
		return fmt.Errorf("%q is %d characters long; give at most 200", name, len(v))
	}
	if strings.IndexFunc(v, unicode.IsControl) >= 0 {
		return fmt.Errorf("%q contains a newline or control character; give one line of text", name)
	}
	return nil
}

// sincePatterns are the dates git understands that a model is likely to
// write. git's own parser takes anything and reads nonsense as "now",
// which would turn a typo into a silently empty answer.
var sincePatterns = []*regexp.Regexp{
	regexp.MustCompile(`^\d{4}-\d{2}-\d{2}([ t]\d{2}:\d{2}(:\d{2})?)?$`),
	regexp.MustCompile(`^\d+[ .]*(second|minute|hour|day|week|month|year)s?([ .]+ago)?$`),
	regexp.MustCompile(`^(yesterday|today|last[ .]+(week|month|year))$`),
}

func checkSince(v string) error {
	s := strings.ToLower(strings.TrimSpace(v))
	for _, p := range sincePatterns {
		if p.MatchString(s) {
			return nil
		}
	}
	return fmt.Errorf(`"since" %q is not a date git_log understands; use a date such as "2024-01-31" or a relative one such as "2 weeks ago", "3 months ago", "yesterday"`, v)
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

// diffEntry is one file pair of a diff as `--name-status -z` reports it:
// a change to one path, or a rename or copy with both of its paths. Both
// matter for the deny-list: git compares a renamed file with its old
// content, so a pair whose old side is a secret file carries the secret.
type diffEntry struct {
	status byte   // 'A', 'C', 'D', 'M', 'R', 'T', ...
	from   string // the old path of a rename or copy, else ""
	to     string // the path (the new one of a rename or copy)
	// oldBlob and newBlob are the blob ids on each side, read from --raw
	// output (possibly abbreviated, all zeros for no blob); "" from
	// --name-status.
	oldBlob, newBlob string
}

// secret says whether either side of the entry holds a secret blob: a
// secret file's content under a public name.
func (e diffEntry) secret(set *secretBlobs) bool {
	return set.hasPrefix(e.oldBlob) || set.hasPrefix(e.newBlob)
}

// paired says whether the entry joins two paths, a rename or a copy.
func (e diffEntry) paired() bool { return e.from != "" }

// anyDenied says whether either path of the entry is a secret file.
func (e diffEntry) anyDenied(ws *Workspace) bool {
	return ws.Denied(e.to) || (e.paired() && ws.Denied(e.from))
}

// readNameStatus reads one entry of `--name-status -z` or `--raw -z`
// output from toks, the output split at NUL, starting at its status ("M",
// "R087") or raw record (":100644 100644 <old> <new> M"). It returns the
// entry and the tokens it used; ok is false when toks[0] is neither or the
// paths are missing because the output was cut.
func readNameStatus(toks []string) (e diffEntry, used int, ok bool) {
	if len(toks) == 0 {
		return diffEntry{}, 0, false
	}
	st := strings.TrimPrefix(toks[0], "\n")
	if raw, ok := strings.CutPrefix(st, ":"); ok {
		f := strings.Fields(raw)
		if len(f) != 5 {
			return diffEntry{}, 0, false
		}
		e.oldBlob, e.newBlob, st = f[2], f[3], f[4]
	}
	if st == "" || !strings.ContainsRune("ACDMRTUXB", rune(st[0])) || strings.Trim(st[1:], "0123456789") != "" {
		return diffEntry{}, 0, false
	}
	e.status = st[0]
	if e.status == 'R' || e.status == 'C' {
		if len(toks) < 3 {
			return diffEntry{}, 0, false
		}
		e.from, e.to = toks[1], toks[2]
		return e, 3, true
	}
	if len(toks) < 2 {
		return diffEntry{}, 0, false
	}
	e.to = toks[1]
	return e, 2, true
}
