package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// GitLogName is the name the model calls git_log by.
const GitLogName = "git_log"

//go:embed desc/git_log.md
var gitLogDescription string

const (
	defaultLogLimit = 20
	maxLogLimit     = 100
	// logOutputLimit is far more than 101 one-line records need; with a
	// pickaxe the names of the files each commit touched come along too.
	logOutputLimit = 1 << 20
)

type gitLogArgs struct {
	Path    string `json:"path"`
	Grep    string `json:"grep"`
	Pickaxe string `json:"pickaxe"`
	Author  string `json:"author"`
	Since   string `json:"since"`
	Limit   int    `json:"limit"`
}

// GitLog is the git_log tool: the commits of the checkout, newest first,
// one line each, filtered by path, message, added or removed text, author
// and date. It is safe for concurrent use.
type GitLog struct{ git *gitCLI }

// NewGitLog returns the git_log tool over ws. It can be built over a
// checkout that is not a git repository; its calls then fail with
// ErrNotGitRepo. opts.Git configures it.
func NewGitLog(ws *Workspace, opts Options) *GitLog {
	return &GitLog{git: newGitCLI(ws, opts.Git)}
}

// Describe implements Describer: the path, then the filters given,
// "lexer.go author=bob since=2024-02-01".
func (l *GitLog) Describe(input json.RawMessage) string {
	return describeFile(input, nil)
}

var gitLogSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "only commits that touched this file or directory, relative to the repository root; a file's history follows renames"},
    "grep": {"type": "string", "description": "only commits whose message contains this text (case-insensitive)"},
    "pickaxe": {"type": "string", "description": "only commits that added or removed this exact string in the code, e.g. a function name (git log -S)"},
    "author": {"type": "string", "description": "only commits whose author name or email contains this text (case-insensitive)"},
    "since": {"type": "string", "description": "only commits after this date, e.g. \"2024-01-31\", \"2 weeks ago\", \"3 months ago\""},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "most commits to list (default 20)"}
  }
}`)

// Definition implements Tool.
func (l *GitLog) Definition() Definition {
	return Definition{Name: GitLogName, Description: strings.TrimSpace(gitLogDescription), Parameters: gitLogSchema}
}

// logRecordStart and logFieldSep frame each commit in git's output, which
// -z ends with NUL; the entries --name-status adds follow it, NUL-separated
// too, so no file name can pass for a record or a second entry.
const (
	logRecordStart = "\x1e"
	logFieldSep    = "\x1f"
	logFormat      = "--format=%x1e%h%x1f%ad%x1f%an%x1f%s"
)

// Run implements Tool.
func (l *GitLog) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[gitLogArgs](input)
	if err != nil {
		return Output{}, err
	}
	limit, err := args.check()
	if err != nil {
		return Output{}, err
	}
	rel, err := l.git.gitPath(args.Path)
	if err != nil {
		return Output{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.git.opts.Timeout)
	defer cancel()
	prefix, err := l.git.prefix(ctx)
	if err != nil {
		return Output{}, err
	}
	isDir := rel == "." || l.isDir(rel)
	follow := !isDir
	var secrets *secretBlobs
	if args.Pickaxe != "" || follow {
		if secrets, err = l.git.secrets(ctx); err != nil {
			return Output{}, err
		}
	}
	out, truncated, err := l.git.output(ctx, logOutputLimit, l.argv(args, rel, prefix, follow, limit)...)
	if err != nil {
		return Output{}, err
	}
	commits := parseLog(out, truncated)
	if args.Pickaxe != "" {
		commits = l.dropDenied(commits, prefix, secrets)
	} else if follow {
		commits = l.dropFollowedSecrets(commits, prefix, secrets)
	}
	o := Text(renderLog(args, rel, follow, limit, commits, OutputBudget(ctx)))
	if strings.TrimSpace(args.Path) != "" {
		o.Refs = []Ref{{Path: rel, Dir: isDir}}
	}
	return o, nil
}

// check refuses what the model must fix and returns the number of commits
// to list.
func (a gitLogArgs) check() (limit int, err error) {
	limit = a.Limit
	switch {
	case limit < 0:
		return 0, fmt.Errorf(`"limit" must be from 1 to %d, not %d; leave it out for %d`, maxLogLimit, limit, defaultLogLimit)
	case limit == 0:
		limit = defaultLogLimit
	case limit > maxLogLimit:
		limit = maxLogLimit
	}
	for _, f := range []struct{ name, v string }{{"grep", a.Grep}, {"pickaxe", a.Pickaxe}, {"author", a.Author}} {
		if err := checkText(f.name, f.v); err != nil {
			return 0, err
		}
	}
	if a.Since != "" {
		if err := checkSince(a.Since); err != nil {
			return 0, err
		}
	}
	return limit, nil
}

// argv is the git log command of a call: rel is the path asked for ("."
// for all), prefix where the checkout is below the top of its repository,
// follow whether rel is a file whose renames are followed.
func (l *GitLog) argv(args gitLogArgs, rel, prefix string, follow bool, limit int) []string {
	// One more than asked for tells whether older commits exist.
	argv := []string{"log", "-z", "-n", strconv.Itoa(limit + 1), "--abbrev=8", "--date=short", logFormat,
		"--no-show-signature", "--no-notes", "--no-textconv", "--no-ext-diff", "--no-color"}
	if args.Grep != "" || args.Author != "" {
		argv = append(argv, "--fixed-strings", "--regexp-ignore-case")
	}
	if args.Grep != "" {
		argv = append(argv, "--grep="+args.Grep)
	}
	if args.Author != "" {
		argv = append(argv, "--author="+args.Author)
	}
	if args.Since != "" {
		argv = append(argv, "--since="+strings.TrimSpace(args.Since))
	}
	if args.Pickaxe != "" {
		// With -S, --raw names just the files where the string changed,
		// with both paths of a rename and the blobs of both sides: a
		// renamed file's count is compared with its old path's, so a
		// rename from a secret file is a hit on the secret, and so is a
		// hit in a secret's content under a public name. The deny-list
		// filter below needs all of it. Names stay relative to the top of
		// the repository: --follow crosses out of a checkout below the
		// top, and --relative would then cut the outside path into a
		// meaningless one.
		argv = append(argv, "-S"+args.Pickaxe, "--raw")
	}
	if follow {
		argv = append(argv, "--follow")
		if args.Pickaxe == "" {
			// The file's name and blob at each commit, for
			// dropFollowedSecrets.
			argv = append(argv, "--raw")
		}
	}
	argv = append(argv, "--")
	switch {
	case rel != ".":
		argv = append(argv, literalPathspec(rel))
	case prefix != "":
		argv = append(argv, ".")
	}
	// A directory's history leaves out the commits that changed only
	// secret files in it: "changed config/" of a commit that rotated
	// config/.env.prod would tell when a secret changed.
	if (args.Pickaxe != "" || rel != ".") && !follow {
		if rel == "." && prefix == "" {
			argv = append(argv, ".")
		}
		argv = append(argv, denyExcludes(l.git.ws.deny)...)
	}
	return argv
}

// isDir says whether rel is a directory in the working tree. A file that
// no longer exists is taken for a file: asking for the history of a
// deleted file is common, and --follow is what finds it.
func (l *GitLog) isDir(rel string) bool {
	f, _, err := l.git.ws.Open(rel)
	if err == nil {
		f.Close()
		return false
	}
	return errors.Is(err, ErrNotRegular)
}

type logCommit struct {
	sha, date, author, subject string
	files                      []diffEntry
}

// parseLog reads the -z output of git log: each record is logRecordStart,
// the fields, NUL, then any --name-status entries.
func parseLog(out []byte, truncated bool) []logCommit {
	toks := strings.Split(string(out), "\x00")
	var commits []logCommit
	cur := -1 // the commit entries belong to; -1 after a malformed record
	for i := 0; i < len(toks); {
		if rec, ok := strings.CutPrefix(strings.TrimPrefix(toks[i], "\n"), logRecordStart); ok {
			i++
			cur = -1
			fields := strings.SplitN(rec, logFieldSep, 4)
			if len(fields) != 4 {
				continue
			}
			commits = append(commits, logCommit{sha: fields[0], date: fields[1], author: fields[2], subject: fields[3]})
			cur = len(commits) - 1
			continue
		}
		e, used, ok := readNameStatus(toks[i:])
		if !ok {
			i++
			continue
		}
		if cur >= 0 {
			commits[cur].files = append(commits[cur].files, e)
		}
		i += used
	}
	if truncated && len(commits) > 0 {
		commits = commits[:len(commits)-1] // the last one may be cut
	}
	return commits
}

// dropDenied removes pickaxe hits that were only in secret files or
// outside the checkout, which the excludes given to git miss when --follow
// allows no other pathspec (and crosses out of a checkout below the top of
// its repository, prefix) or a deny pattern has no pathspec form. A hit in
// a file renamed from or to such a file is a hit in it: git counted the
// string on both sides. A hit in a file whose old or new content is a
// secret blob is a hit in the secret. These commits are dropped without a
// word: a note would itself say where the string was.
func (l *GitLog) dropDenied(commits []logCommit, prefix string, secrets *secretBlobs) []logCommit {
	shown := func(name string) bool {
		rel, ok := strings.CutPrefix(name, prefix)
		return ok && !l.git.ws.Denied(rel)
	}
	kept := commits[:0]
	for _, c := range commits {
		visible := len(c.files) == 0
		for _, f := range c.files {
			if shown(f.to) && (!f.paired() || shown(f.from)) && !f.secret(secrets) {
				visible = true
				break
			}
		}
		if visible {
			kept = append(kept, c)
		}
	}
	return kept
}

// dropFollowedSecrets removes, from the history of one file followed
// across renames, the commits in which it was a secret file, by name or
// by content: a file renamed from .env would otherwise list every commit
// that changed .env, and so tell when the secret changed. The commit that
// renamed it to its public name stays, unless the file kept the secret's
// content there.
func (l *GitLog) dropFollowedSecrets(commits []logCommit, prefix string, secrets *secretBlobs) []logCommit {
	kept := commits[:0]
	for _, c := range commits {
		visible := len(c.files) == 0
		for _, f := range c.files {
			rel, ok := strings.CutPrefix(f.to, prefix)
			if ok && !l.git.ws.Denied(rel) && !secrets.hasPrefix(f.newBlob) {
				visible = true
				break
			}
		}
		if visible {
			kept = append(kept, c)
		}
	}
	return kept
}

// maxSubjectRunes cuts a commit subject: git takes any length, and one
// line per commit is what the list is for (git_show has the message).
const maxSubjectRunes = 200

// renderLog lists the commits that fit budget bytes, the header and the
// note on what was left out included.
func renderLog(args gitLogArgs, rel string, follow bool, limit int, commits []logCommit, budget int) string {
	var filters []string
	if rel != "." {
		f := "path " + rel
		if follow {
			f += " (following renames)"
		}
		filters = append(filters, f)
	}
	if args.Grep != "" {
		filters = append(filters, fmt.Sprintf("message contains %q", args.Grep))
	}
	if args.Pickaxe != "" {
		filters = append(filters, fmt.Sprintf("adds or removes %q", args.Pickaxe))
	}
	if args.Author != "" {
		filters = append(filters, fmt.Sprintf("author %q", args.Author))
	}
	if args.Since != "" {
		filters = append(filters, "since "+strings.TrimSpace(args.Since))
	}
	where := ""
	if len(filters) > 0 {
		where = ": " + strings.Join(filters, ", ")
	}
	var b strings.Builder
	if len(commits) == 0 {
		fmt.Fprintf(&b, "no commits%s.", where)
		b.WriteString(" grep searches commit messages, pickaxe searches the code a commit added or removed, author matches part of a name or email; loosen a filter, or check the path with glob.\n")
		return b.String()
	}
	more := len(commits) > limit
	commits = commits[:min(len(commits), limit)]
	// Room for the header and the note; the filters are in both.
	room := budget - 2*len(where) - 256
	var body strings.Builder
	shown := 0
	for _, c := range commits {
		line := c.sha + " " + c.date + " " + clipRunes(c.author, maxAuthorRunes) + "\t" + clipRunes(c.subject, maxSubjectRunes) + "\n"
		if body.Len()+len(line) > room && shown > 0 {
			break
		}
		body.WriteString(line)
		shown++
	}
	fmt.Fprintf(&b, "%d %s%s, newest first\n", shown, nounFor(shown, "commit", "commits"), where)
	b.WriteString(body.String())
	switch {
	case shown < len(commits):
		fmt.Fprintf(&b, "[%d more of the %d asked for did not fit the output limit, from %s on; narrow with path, since, author or grep, or lower limit]\n",
			len(commits)-shown, limit, commits[shown].sha)
	case more:
		raise := "raise limit (at most 100) or "
		if limit >= maxLogLimit {
			raise = ""
		}
		fmt.Fprintf(&b, "[older commits exist; %snarrow with path, since, author or grep]\n", raise)
	}
	return b.String()
}

// Summarize gives "12 commits" or "no commits".
func (l *GitLog) Summarize(output string) string {
	if strings.HasPrefix(output, "no commits") {
		return "no commits"
	}
	first, _, _ := strings.Cut(output, "\n")
	n, rest, _ := strings.Cut(first, " ")
	if _, err := strconv.Atoi(n); err != nil || !strings.HasPrefix(rest, "commit") {
		return countLines(output)
	}
	word, _, _ := strings.Cut(rest, ":")
	word, _, _ = strings.Cut(word, ",")
	return n + " " + word
}
