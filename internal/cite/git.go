package cite

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec"
)

// DefaultGitTimeout bounds one git run when GitChecker.Timeout is zero.
const DefaultGitTimeout = 10 * time.Second

// GitChecker is a Checker over a git repository at a fixed commit: it reads
// the commit's tree, not the working files, so a citation is judged against
// exactly the code the model was shown at that commit, whatever the checkout
// holds now. A whole answer's paths are looked up with one
// `git cat-file --batch` process. Paths travel on its standard input, never
// as arguments, so no path can be read as an option. Safe for concurrent use.
type GitChecker struct {
	git    gitexec.Git
	commit string
	// Timeout bounds each git run; zero means DefaultGitTimeout.
	Timeout time.Duration
}

var (
	_ Checker      = (*GitChecker)(nil)
	_ BatchChecker = (*GitChecker)(nil)
)

// NewGitChecker resolves rev (a SHA, branch or tag) in the repository at dir
// to a full commit SHA and returns a checker pinned to it. git finds the
// repository from dir; NewGitCheckerFor takes one already checked.
func NewGitChecker(ctx context.Context, dir, rev string) (*GitChecker, error) {
	return NewGitCheckerFor(ctx, gitexec.Git{Dir: dir}, rev)
}

// NewGitCheckerFor is NewGitChecker over the repository git names (its
// GitDir pinned by the caller, typically from the checkout's Workspace).
// Every git run goes through gitexec's hardening, so the repository's config
// runs no program.
func NewGitCheckerFor(ctx context.Context, git gitexec.Git, rev string) (*GitChecker, error) {
	if rev == "" || strings.HasPrefix(rev, "-") || strings.ContainsFunc(rev, isControl) {
		return nil, fmt.Errorf("git checker: revision %q is not a commit name: give a SHA, branch or tag", rev)
	}
	dir := git.Dir
	g := &GitChecker{git: git}
	ctx, cancel := context.WithTimeout(ctx, g.timeout())
	defer cancel()
	var out bytes.Buffer
	stderr := &limitedBuffer{max: 4096}
	cmd := g.command(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	cmd.Stdout, cmd.Stderr = &out, stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git checker: resolve %q: %w", rev, ctx.Err())
		}
		return nil, fmt.Errorf("git checker: %q is not a commit in %s (is it fetched?): %w %s", rev, dir, err, strings.TrimSpace(stderr.String()))
	}
	g.commit = strings.TrimSpace(out.String())
	return g, nil
}

// Commit is the full SHA the checker reads.
func (g *GitChecker) Commit() string { return g.commit }

// Lines reports the line count of path at the commit.
func (g *GitChecker) Lines(ctx context.Context, path string) (int, error) {
	a := g.LinesBatch(ctx, []string{path})
	return a[0].N, a[0].Err
}

// LinesBatch looks all paths up in one git process. Paths are taken as
// repository-relative; symlinks inside the tree are followed, ones leading
// out of it count as missing.
func (g *GitChecker) LinesBatch(ctx context.Context, paths []string) []LineCount {
	out := make([]LineCount, len(paths))
	var in bytes.Buffer
	var sent []int
	for i, p := range paths {
		if p == "" || strings.ContainsFunc(p, isControl) || strings.HasPrefix(p, "/") {
			out[i].Err = &fs.PathError{Op: "lines", Path: p, Err: ErrInvalidPath}
			continue
		}
		sent = append(sent, i)
		in.WriteString(g.commit + ":" + p + "\n")
	}
	if len(sent) == 0 {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout())
	defer cancel()
	cmd := g.command(ctx, "cat-file", "--batch", "--follow-symlinks")
	cmd.Stdin = &in
	stderr := &limitedBuffer{max: 4096}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		for _, i := range sent {
			out[i].Err = fmt.Errorf("git cat-file: %w", err)
		}
		return out
	}
	r := bufio.NewReaderSize(stdout, 64<<10)
	buf := make([]byte, 32<<10)
	done := 0
	var readErr error
	for _, i := range sent {
		n, err := readObject(r, g.commit+":"+paths[i], buf)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrIsDir) {
			err = &fs.PathError{Op: "lines", Path: paths[i], Err: err}
		} else if err != nil {
			readErr = err
			break
		}
		out[i] = LineCount{N: n, Err: err}
		done++
	}
	if readErr != nil {
		cancel() // git may be blocked writing what nobody reads now
	}
	waitErr := cmd.Wait()
	if done < len(sent) {
		cause := readErr
		switch {
		case ctx.Err() != nil:
			cause = ctx.Err()
		case waitErr != nil:
			cause = fmt.Errorf("%w %s", waitErr, strings.TrimSpace(stderr.String()))
		}
		for _, i := range sent[done:] {
			out[i].Err = fmt.Errorf("git cat-file in %s: %w", g.git.Dir, cause)
		}
	}
	return out
}

// readObject reads one answer of cat-file --batch --follow-symlinks and
// counts the lines of a blob: newlines, plus one for a last line without
// one.
func readObject(r *bufio.Reader, name string, buf []byte) (int, error) {
	header, err := r.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("read git answer: %w", err)
	}
	header = strings.TrimSuffix(header, "\n")
	if header == name+" missing" || header == name+" ambiguous" {
		return 0, fs.ErrNotExist
	}
	f := strings.Fields(header)
	switch {
	case len(f) == 2 && (f[0] == "dangling" || f[0] == "loop" || f[0] == "notdir" || f[0] == "symlink"):
		// A symlink that cannot be followed inside the tree; the body is
		// the name or the link target.
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("git answered %q", header)
		}
		if _, err := r.Discard(int(size) + 1); err != nil {
			return 0, fmt.Errorf("read git answer: %w", err)
		}
		return 0, fs.ErrNotExist
	case len(f) != 3:
		return 0, fmt.Errorf("git answered %q", header)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return 0, fmt.Errorf("git answered %q", header)
	}
	if f[1] != "blob" {
		if _, err := io.CopyN(io.Discard, r, size+1); err != nil {
			return 0, fmt.Errorf("read git answer: %w", err)
		}
		if f[1] == "tree" {
			return 0, ErrIsDir
		}
		return 0, fs.ErrNotExist // a submodule's commit: not a file of this repository
	}
	n, last, err := countLines(io.LimitReader(r, size), buf)
	if err == nil {
		_, err = r.Discard(1)
	}
	if err != nil {
		return 0, fmt.Errorf("read git answer: %w", err)
	}
	if last != '\n' && last != 0 {
		n++
	}
	return n, nil
}

// countLines counts newlines in r, reading through buf, and reports the
// last byte (0 if none).
func countLines(r io.Reader, buf []byte) (n int, last byte, err error) {
	for {
		m, err := r.Read(buf)
		if m > 0 {
			n += bytes.Count(buf[:m], []byte{'\n'})
			last = buf[m-1]
		}
		if err == io.EOF {
			return n, last, nil
		}
		if err != nil {
			return n, last, err
		}
	}
}

func (g *GitChecker) timeout() time.Duration {
	if g.Timeout > 0 {
		return g.Timeout
	}
	return DefaultGitTimeout
}

// command runs git in the repository. cat-file --batch without --filters
// and rev-parse run no filter or driver the repository names.
func (g *GitChecker) command(ctx context.Context, args ...string) *exec.Cmd {
	return g.git.Command(ctx, args...)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// limitedBuffer keeps the first max bytes written to it: enough of git's
// stderr for an error message, never an unbounded amount.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return l.buf.String() }
