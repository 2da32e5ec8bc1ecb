package gitexectest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Opts are what a fixture's git command needs beyond its arguments.
type Opts struct {
	// Env is added after the fixture's own environment, so it can
	// override the identity or the dates.
	Env []string
	// Stdin is fed to git, for fast-import, mktree or update-ref --stdin.
	Stdin string
}

// Env is the environment fixtures run git in: the test process's own
// without any GIT_* variable (a test may have set some to attack the code
// under test), no user or system config, a fixed identity, and extra last.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
	)
	return append(env, extra...)
}

// Git runs git for a test in dir (see Env) and fails the test on error;
// it returns the combined output without surrounding space. It is
// deliberately not hardened: it builds fixtures.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(Run(t, dir, Opts{}, args...))
}

// Run is Git with extra environment and stdin; it returns git's combined
// output as is. A test is skipped when git is not installed.
func Run(t testing.TB, dir string, o Opts, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = Env(o.Env...)
	if o.Stdin != "" {
		cmd.Stdin = strings.NewReader(o.Stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// WriteFiles creates files (slash paths → contents) under dir, making the
// directories they need.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		write(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
}

// Repo is a work tree to build a history in.
type Repo struct {
	t   testing.TB
	Dir string
	n   int // commits made through Commit, for the default dates
}

// Init creates a repository on branch main in dir, or in a new temporary
// directory when dir is "".
func Init(t testing.TB, dir string) *Repo {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "--quiet")
	return Open(t, dir)
}

// Open is a Repo for the existing work tree dir.
func Open(t testing.TB, dir string) *Repo { return &Repo{t: t, Dir: dir} }

// Git runs git in the repository; see the package's Git.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return Git(r.t, r.Dir, args...)
}

// Write creates files (slash paths → contents) in the work tree.
func (r *Repo) Write(files map[string]string) {
	r.t.Helper()
	WriteFiles(r.t, r.Dir, files)
}

// Commit is one commit of a fixture's history. Its changes apply in the
// order write, remove, rename (so a file written and renamed in one commit
// moves with its new content); then everything in the work tree is staged.
type Commit struct {
	Message string            // "change" when empty
	Author  string            // "Name <email>", author and committer; Test's when empty
	Date    string            // author and committer date; a fixed one per commit when empty
	Write   map[string]string // files to create or replace
	Remove  []string          // files to git rm
	Rename  [2]string         // from, to, for git mv
	Force   bool              // stage ignored files too (git add -f)
}

// base is the first default commit date; each later commit is a minute
// on, so histories are the same on every run and ordered by date.
var base = time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)

// Commit makes c and returns the new commit's full SHA.
func (r *Repo) Commit(c Commit) string {
	r.t.Helper()
	msg := c.Message
	if msg == "" {
		msg = "change"
	}
	date := c.Date
	if date == "" {
		date = base.Add(time.Duration(r.n) * time.Minute).Format(time.RFC3339)
	}
	r.n++
	env := []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}
	if c.Author != "" {
		name, email, ok := strings.Cut(c.Author, " <")
		if !ok {
			r.t.Fatalf("author %q is not Name <email>", c.Author)
		}
		email = strings.TrimSuffix(email, ">")
		env = append(env, "GIT_AUTHOR_NAME="+name, "GIT_AUTHOR_EMAIL="+email,
			"GIT_COMMITTER_NAME="+name, "GIT_COMMITTER_EMAIL="+email)
	}
	r.Write(c.Write)
	for _, p := range c.Remove {
		r.Git("rm", "-q", "--", p)
	}
	if c.Rename[0] != "" {
		r.Git("mv", "--", c.Rename[0], c.Rename[1])
	}
	add := []string{"add", "-A"}
	if c.Force {
		add = append(add, "-f", ".")
	}
	r.Git(add...)
	Run(r.t, r.Dir, Opts{Env: env}, "commit", "--quiet", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}

// Remote is a bare repository reached by a file:// URL, with a work tree
// (the embedded Repo) to commit through and push from.
type Remote struct {
	*Repo
	Bare string
	URL  string
}

// NewRemote creates an empty bare repository and its work tree in a new
// temporary directory.
func NewRemote(t testing.TB) *Remote {
	t.Helper()
	dir := t.TempDir()
	r := &Remote{Repo: Init(t, filepath.Join(dir, "work")), Bare: filepath.Join(dir, "remote.git")}
	Git(t, dir, "init", "--quiet", "--bare", r.Bare)
	r.URL = "file://" + r.Bare
	return r
}

// Push makes c on branch (created from the current one when new) in the
// work tree, force-pushes the branch, and returns the commit's SHA.
func (r *Remote) Push(branch string, c Commit) string {
	r.t.Helper()
	if cur := r.Git("symbolic-ref", "--short", "HEAD"); cur != branch {
		if r.Git("branch", "--list", branch) != "" {
			r.Git("checkout", "--quiet", branch)
		} else {
			r.Git("checkout", "--quiet", "-b", branch)
		}
	}
	sha := r.Commit(c)
	r.Git("push", "--quiet", "--force", r.Bare, "HEAD:refs/heads/"+branch)
	return sha
}

// Clone clones the remote into a new temporary directory and returns it.
func (r *Remote) Clone(t testing.TB) *Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	Git(t, filepath.Dir(dir), "clone", "--quiet", r.URL, dir)
	return Open(t, dir)
}
