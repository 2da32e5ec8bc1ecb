package tools

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// GitShowName is the name the model calls git_show by.
const GitShowName = "git_show"

//go:embed desc/git_show.md
var gitShowDescription string

const (
	// showMetaLimit caps the message and diffstat; a commit touching
	// thousands of files still fits, cut.
	showMetaLimit = 64 << 10
	// statFiles is how many files the diffstat lists before "...".
	statFiles = 300
	// diffMaxLines and diffMaxBytes cap the diff of one path: about
	// 8k tokens, the same budget as one tool result.
	diffMaxLines = 400
	diffMaxBytes = 30 << 10
	// maxDiffFiles bounds the files named on one command line when a
	// directory's diff has to leave secret files out.
	maxDiffFiles = 500
)

type gitShowArgs struct {
	Commit string `json:"commit"`
	Path   string `json:"path"`
}

// GitShow is the git_show tool: one commit's metadata, full message and
// diffstat, and the diff of one path when asked. It is safe for
// concurrent use.
type GitShow struct{ git *gitCLI }

var (
	_ Tool       = (*GitShow)(nil)
	_ Summarizer = (*GitShow)(nil)
)

// NewGitShow returns the git_show tool over ws. It can be built over a
// checkout that is not a git repository; its calls then fail with
// ErrNotGitRepo.
func NewGitShow(ws *Workspace, opts GitOptions) *GitShow {
	return &GitShow{git: newGitCLI(ws, opts)}
}

var gitShowSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "commit": {"type": "string", "description": "the commit: a sha from git_log or git_blame, a branch or tag name, HEAD, HEAD~2 (default HEAD)"},
    "path": {"type": "string", "description": "a file or directory changed in the commit, relative to the repository root; its diff is shown"}
  }
}`)

// Definition implements Tool.
func (s *GitShow) Definition() Definition {
	return Definition{Name: GitShowName, Description: strings.TrimSpace(gitShowDescription), Parameters: gitShowSchema}
}

// gitDiffFlags are shared by every diff-producing call: no program from the
// repository's config, renames found, a merge shown against its first
// parent (what it brought in) rather than as an unreadable combined diff,
// paths relative to the checkout and limited to it.
var gitDiffFlags = []string{"--no-color", "--no-ext-diff", "--no-textconv", "--no-show-signature", "--no-notes",
	"--diff-merges=first-parent", "-M", "--relative"}

// Run implements Tool.
func (s *GitShow) Run(ctx context.Context, input json.RawMessage) (string, error) {
	args, err := ParseArgs[gitShowArgs](input)
	if err != nil {
		return "", err
	}
	ref := strings.TrimSpace(args.Commit)
	if ref == "" {
		ref = "HEAD"
	}
	if err := checkRef(ref); err != nil {
		return "", err
	}
	rel := "."
	if strings.TrimSpace(args.Path) != "" {
		if rel, err = s.git.gitPath(args.Path); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.git.opts.Timeout)
	defer cancel()
	if _, err := s.git.prefix(ctx); err != nil {
		return "", err
	}
	sha, err := s.git.resolveCommit(ctx, ref)
	if err != nil {
		return "", err
	}

	argv := append([]string{"show", "--date=iso",
		// format: (not tformat:) so one blank line, not two, parts the
		// message from the diffstat.
		"--pretty=format:commit %H%nAuthor: %an <%ae>%nDate:   %ad%nParents: %p%n%n%B",
		"--stat=1000,800," + strconv.Itoa(statFiles), "--stat-graph-width=20"}, gitDiffFlags...)
	argv = append(argv, "--end-of-options", sha, "--")
	meta, truncated, err := s.git.output(ctx, showMetaLimit, argv...)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(strings.Replace(strings.ToValidUTF8(string(bytes.TrimRight(meta, "\n")), "\uFFFD"),
		"\nParents: \n", "\nParents: none (the first commit)\n", 1))
	b.WriteByte('\n')
	if truncated {
		fmt.Fprintf(&b, "[message and file list cut at %d KB]\n", showMetaLimit>>10)
	}
	if rel == "." {
		b.WriteString("\n[pass path (a file from the list above) to see its diff in this commit]\n")
		return b.String(), nil
	}
	if err := s.diff(ctx, &b, sha, rel); err != nil {
		return b.String(), err
	}
	return b.String(), nil
}

// diff appends the diff of rel in commit sha. A secret file is never
// diffed, also when rel is a directory that holds one: the commit's files
// under rel are listed first and the secret ones left out by name.
func (s *GitShow) diff(ctx context.Context, b *strings.Builder, sha, rel string) error {
	argv := append([]string{"show", "--format=", "--name-only", "-z"}, gitDiffFlags...)
	argv = append(argv, "--end-of-options", sha, "--", literalPathspec(rel))
	names, truncated, err := s.git.output(ctx, 1<<20, argv...)
	if err != nil {
		return err
	}
	var files, hidden []string
	for _, n := range strings.Split(string(names), "\x00") {
		switch {
		case n == "":
		case s.git.ws.Denied(n):
			hidden = append(hidden, n)
		default:
			files = append(files, n)
		}
	}
	if truncated && len(files) > 0 {
		files = files[:len(files)-1]
	}
	short := sha[:8]
	if len(files) == 0 && len(hidden) == 0 {
		fmt.Fprintf(b, "\n[%s is not changed in commit %s; pass a path from the list above]\n", rel, short)
		return nil
	}
	b.WriteString("\n")
	if len(hidden) > 0 {
		fmt.Fprintf(b, "[not shown, on the deny-list of secret files: %s]\n", strings.Join(hidden, ", "))
	}
	if len(files) == 0 {
		return nil
	}
	specs := []string{literalPathspec(rel)}
	if len(hidden) > 0 || truncated {
		specs = specs[:0]
		for _, f := range files[:min(len(files), maxDiffFiles)] {
			specs = append(specs, literalPathspec(f))
		}
	}
	argv = append([]string{"show", "--format=", "--patch"}, gitDiffFlags...)
	argv = append(argv, "--end-of-options", sha, "--")
	argv = append(argv, specs...)
	patch, cut, err := s.git.output(ctx, diffMaxBytes, argv...)
	if err != nil {
		return err
	}
	text := string(patch)
	if cut {
		// Keep whole lines only.
		if i := strings.LastIndexByte(text, '\n'); i >= 0 {
			text = text[:i+1]
		}
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > diffMaxLines {
		lines, cut = lines[:diffMaxLines], true
	}
	for _, l := range lines {
		b.WriteString(strings.ToValidUTF8(l, "\uFFFD"))
	}
	if cut {
		next := "pass one file's path to see its diff alone"
		if len(files) == 1 {
			next = "read the file as it is now with read_file, or see which commit wrote which lines with git_blame"
		}
		fmt.Fprintf(b, "[diff cut at %d lines / %d KB; it goes on. To see more, %s]\n", len(lines), diffMaxBytes>>10, next)
	}
	return nil
}

// Summarize gives "1a2b3c4d: 3 files changed".
func (s *GitShow) Summarize(output string) string {
	first, _, _ := strings.Cut(output, "\n")
	sha, ok := strings.CutPrefix(first, "commit ")
	if !ok || len(sha) < 8 {
		return countLines(output)
	}
	sum := sha[:8]
	for _, line := range strings.Split(output, "\n") {
		if t := strings.TrimSpace(line); strings.Contains(t, " changed") && (strings.Contains(t, "file changed") || strings.Contains(t, "files changed")) {
			n, _, _ := strings.Cut(t, ",")
			sum += ": " + n
			break
		}
	}
	if strings.Contains(output, "\ndiff --git ") {
		sum += ", with diff"
	}
	return sum
}
