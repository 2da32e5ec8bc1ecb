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
	// showNoteRoom is kept out of the output budget for the notes after
	// the message and after the diff.
	showNoteRoom = 512
)

type gitShowArgs struct {
	Commit string `json:"commit"`
	Path   string `json:"path"`
}

// GitShow is the git_show tool: one commit's metadata, full message and
// diffstat, and the diff of one path when asked. It is safe for
// concurrent use.
type GitShow struct{ git *gitCLI }

// NewGitShow returns the git_show tool over ws. It can be built over a
// checkout that is not a git repository; its calls then fail with
// ErrNotGitRepo. opts.Git configures it.
func NewGitShow(ws *Workspace, opts Options) *GitShow {
	return &GitShow{git: newGitCLI(ws, opts.Git)}
}

// Describe implements Describer: "commit=HEAD~1", "lexer.go
// commit=1a2b3c4d".
func (s *GitShow) Describe(input json.RawMessage) string {
	return describeFile(input, nil)
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
// repository's config, a merge shown against its first parent (what it
// brought in) rather than as an unreadable combined diff, paths relative to
// the checkout and limited to it. Rename detection is chosen per commit by
// commitChanges and always given explicitly, so the repository's diff.renames
// (which can ask for copies) has no say.
var gitDiffFlags = []string{"--no-color", "--no-ext-diff", "--no-textconv", "--no-show-signature", "--no-notes",
	"--diff-merges=first-parent", "--relative"}

// diffFlags is gitDiffFlags with the rename flag of one commit.
func diffFlags(rename string) []string {
	return append(append(make([]string, 0, len(gitDiffFlags)+1), gitDiffFlags...), rename)
}

// Run implements Tool.
func (s *GitShow) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[gitShowArgs](input)
	if err != nil {
		return Output{}, err
	}
	ref := strings.TrimSpace(args.Commit)
	if ref == "" {
		ref = "HEAD"
	}
	if err := checkRef(ref); err != nil {
		return Output{}, err
	}
	rel := "."
	if strings.TrimSpace(args.Path) != "" {
		if rel, err = s.git.gitPath(args.Path); err != nil {
			return Output{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.git.opts.Timeout)
	defer cancel()
	if _, err := s.git.prefix(ctx); err != nil {
		return Output{}, err
	}
	sha, err := s.git.resolveCommit(ctx, ref)
	if err != nil {
		return Output{}, err
	}

	// Every blob that was ever at a denied path, under any name; the
	// commit's own history counts too when no ref reaches it.
	secrets, err := s.git.secretsAt(ctx, sha)
	if err != nil {
		return Output{}, err
	}
	ch, err := s.changes(ctx, sha, secrets)
	if err != nil {
		return Output{}, err
	}
	budget := OutputBudget(ctx)
	var b strings.Builder
	if err := s.writeMeta(ctx, &b, sha, rel, ch, budget); err != nil {
		return Output{}, err
	}
	if rel == "." {
		b.WriteString("\n[pass path (a file from the list above) to see its diff in this commit]\n")
		return Text(b.String()), nil
	}
	if err := s.diff(ctx, &b, sha, rel, ch.rename, secrets, budget); err != nil {
		return Text(b.String()), err
	}
	return Output{Text: b.String(), Refs: []Ref{{Path: rel, Commit: sha}}}, nil
}

// writeMeta writes the commit's metadata, message and diffstat. They fit
// the output budget: they take at most a third of it when a diff of rel
// is to follow.
func (s *GitShow) writeMeta(ctx context.Context, b *strings.Builder, sha, rel string, ch commitChanges, budget int) error {
	metaLimit := max(1024, min(showMetaLimit, budget-showNoteRoom))
	if rel != "." {
		metaLimit = max(1024, min(metaLimit, budget/3))
	}
	head, truncated, err := s.git.output(ctx, metaLimit, "show", "-s", "--date=iso",
		"--pretty=format:commit %H%nAuthor: %an <%ae>%nDate:   %ad%nParents: %p%n%n%B", "--no-show-signature", "--no-notes",
		"--end-of-options", sha, "--")
	if err != nil {
		return err
	}
	var stat []byte
	if specs := ch.statSpecs(s.git.ws.deny); !truncated && specs != nil {
		argv := append([]string{"show", "--format=", "--stat=1000,800," + strconv.Itoa(statFiles), "--stat-graph-width=20"}, diffFlags(ch.rename)...)
		argv = append(argv, "--end-of-options", sha, "--")
		argv = append(argv, specs...)
		if stat, truncated, err = s.git.output(ctx, max(256, metaLimit-len(head)), argv...); err != nil {
			return err
		}
	}
	meta := bytes.TrimRight(head, "\n")
	if stat = bytes.TrimRight(stat, "\n"); len(stat) > 0 {
		meta = append(append(meta, "\n\n"...), stat...)
	}
	if truncated {
		// Keep whole lines only.
		if i := bytes.LastIndexByte(meta, '\n'); i >= 0 {
			meta = meta[:i+1]
		}
	}
	b.WriteString(strings.Replace(strings.ToValidUTF8(string(bytes.TrimRight(meta, "\n")), "\uFFFD"),
		"\nParents: \n", "\nParents: none (the first commit)\n", 1))
	b.WriteByte('\n')
	if truncated {
		fmt.Fprintf(b, "[message and file list cut at %d KB, for the output limit]\n", metaLimit>>10)
	}
	if ch.split {
		b.WriteString("[renames in this commit are listed as a deletion and an addition]\n")
	}
	return nil
}

// diff appends the diff of rel in commit sha. A secret file is never
// diffed, also when rel is a directory that holds one or when a file was
// renamed from or to one, and neither is a file whose old or new content
// is a secret blob: the commit's files under rel are listed first with
// their blobs, both paths of each rename, and when a secret one is among
// them the diff names the others one by one, so git never reads a
// secret's blob.
func (s *GitShow) diff(ctx context.Context, b *strings.Builder, sha, rel, rename string, secrets *secretBlobs, budget int) error {
	argv := append([]string{"show", "--format=", "--raw", "-z"}, diffFlags(rename)...)
	argv = append(argv, "--end-of-options", sha, "--", literalPathspec(rel))
	names, truncated, err := s.git.output(ctx, 1<<20, argv...)
	if err != nil {
		return err
	}
	entries := parseNameStatus(names)
	if truncated && len(entries) > 0 {
		// The last entry's path may be cut.
		entries = entries[:len(entries)-1]
	}
	d := s.sortDiff(entries, secrets)
	// Denied files (hidden) are left out without a word, as the
	// diffstat leaves them out: a directory whose only change is a
	// secret file's is not changed, as far as the tools tell.
	if len(d.files) == 0 && len(d.held) == 0 {
		fmt.Fprintf(b, "\n[%s is not changed in commit %s; pass a path from the list above]\n", rel, sha[:8])
		return nil
	}
	b.WriteString("\n")
	if len(d.held) > 0 {
		fmt.Fprintf(b, "[not shown, their content was once in a secret file: %s]\n", strings.Join(d.held, ", "))
	}
	for _, n := range d.notes {
		fmt.Fprintf(b, "[%s]\n", n)
	}
	if len(d.files) == 0 {
		return nil
	}
	specs := []string{literalPathspec(rel)}
	if len(d.hidden) > 0 || len(d.held) > 0 || truncated {
		specs = specs[:0]
		for _, f := range d.files[:min(len(d.files), maxDiffFiles)] {
			specs = append(specs, literalPathspec(f))
		}
	}
	next := "pass one file's path to see its diff alone"
	if len(d.files) == 1 {
		next = "read the file as it is now with read_file, or see which commit wrote which lines with git_blame"
	}
	limit := min(diffMaxBytes, budget-b.Len()-showNoteRoom)
	if limit < 1024 {
		fmt.Fprintf(b, "[the diff does not fit in the output limit after the list above; %s]\n", next)
		return nil
	}
	argv = append([]string{"show", "--format=", "--patch"}, diffFlags(rename)...)
	argv = append(argv, "--end-of-options", sha, "--")
	argv = append(argv, specs...)
	patch, cut, err := s.git.output(ctx, limit, argv...)
	if err != nil {
		return err
	}
	writePatch(b, patch, cut, limit, next)
	return nil
}

// diffSides is a commit's changed files under a path, sorted by what may
// be shown of them.
type diffSides struct {
	files  []string // diffed
	hidden []string // denied paths, not named at all
	held   []string // public paths whose content, on one side, is a secret blob
	notes  []string // what a rename with a hidden side is shown as
}

// sortDiff sorts the entries of a commit's raw diff into what is diffed,
// what is hidden and what is named but not diffed.
func (s *GitShow) sortDiff(entries []diffEntry, secrets *secretBlobs) diffSides {
	var d diffSides
	denied := s.git.ws.Denied
	hide := func(name string) {
		if denied(name) {
			d.hidden = append(d.hidden, name)
		} else {
			d.held = append(d.held, name)
		}
	}
	for _, e := range entries {
		if !e.paired() {
			switch {
			case denied(e.to):
				d.hidden = append(d.hidden, e.to)
			case e.secret(secrets):
				d.held = append(d.held, e.to)
			default:
				d.files = append(d.files, e.to)
			}
			continue
		}
		fromDenied := denied(e.from) || secrets.hasPrefix(e.oldBlob)
		toDenied := denied(e.to) || secrets.hasPrefix(e.newBlob)
		verb := "renamed"
		if e.status == 'C' {
			verb = "copied"
		}
		switch {
		case !fromDenied && !toDenied:
			d.files = append(d.files, e.from, e.to)
		case fromDenied && toDenied:
			hide(e.from)
			hide(e.to)
		case fromDenied:
			// Named alone, the new path is diffed as a new file: its
			// own content, nothing of the secret it came from. A
			// denied path is not named at all.
			hide(e.from)
			d.files = append(d.files, e.to)
			if !denied(e.from) {
				d.notes = append(d.notes, fmt.Sprintf("%s was %s from %s, whose content is not shown: shown as a new file", e.to, verb, e.from))
			}
		default:
			hide(e.to)
			if e.status == 'R' {
				d.files = append(d.files, e.from)
				if !denied(e.to) {
					d.notes = append(d.notes, fmt.Sprintf("%s was renamed to %s, whose content is not shown: shown as a deletion", e.from, e.to))
				}
			}
		}
	}
	return d
}

// writePatch appends the patch git wrote, whole lines only and at most
// diffMaxLines of them; cut says git's output stopped at limit bytes.
func writePatch(b *strings.Builder, patch []byte, cut bool, limit int, next string) {
	text := string(patch)
	at := ""
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
	} else if cut {
		at = fmt.Sprintf(", the %d KB left in the output", limit>>10)
	}
	for _, l := range lines {
		b.WriteString(strings.ToValidUTF8(l, "\uFFFD"))
	}
	if cut {
		fmt.Fprintf(b, "[diff cut at %d lines%s; it goes on. To see more, %s]\n", len(lines), at, next)
	}
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
