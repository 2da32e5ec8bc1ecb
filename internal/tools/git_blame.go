package tools

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// GitBlameName is the name the model calls git_blame by.
const GitBlameName = "git_blame"

//go:embed desc/git_blame.md
var gitBlameDescription string

const (
	defaultBlameLines = 200
	maxBlameLines     = 400
	// blameOutputLimit holds 400 porcelain lines with room for long ones;
	// each line is cut to maxLineRunes when shown anyway.
	blameOutputLimit = 4 << 20
)

type gitBlameArgs struct {
	Path   string `json:"path"`
	Start  int    `json:"start"`
	End    int    `json:"end"`
	Commit string `json:"commit"`
}

// GitBlame is the git_blame tool: for each line of a file, the commit
// that last changed it, with its author and date. It blames a commit
// (HEAD by default), never the working tree: git would run the
// repository's clean filters over a working-tree file, and those are
// programs. It is safe for concurrent use.
type GitBlame struct{ git *gitCLI }

// NewGitBlame returns the git_blame tool over ws. It can be built over a
// checkout that is not a git repository; its calls then fail with
// ErrNotGitRepo. opts.Git configures it.
func NewGitBlame(ws *Workspace, opts Options) *GitBlame {
	return &GitBlame{git: newGitCLI(ws, opts.Git)}
}

// Describe implements Describer: "lexer.go:3-9", "lexer.go:3-" for a start
// alone, then the commit, "lexer.go commit=HEAD~3".
func (g *GitBlame) Describe(input json.RawMessage) string {
	return describeFile(input, func(f argsForm) string {
		start, hasStart := f.num("start")
		end, hasEnd := f.num("end")
		switch {
		case hasStart && hasEnd:
			return fmt.Sprintf(":%d-%d", start, end)
		case hasStart:
			return fmt.Sprintf(":%d-", start)
		case hasEnd:
			return fmt.Sprintf(":1-%d", end)
		}
		return ""
	})
}

var gitBlameSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "file to blame, relative to the repository root"},
    "start": {"type": "integer", "minimum": 1, "description": "first line, 1-based (default 1)"},
    "end": {"type": "integer", "minimum": 1, "description": "last line (default start+199; at most 400 lines per call)"},
    "commit": {"type": "string", "description": "blame the file as of this commit: a sha, branch, tag or HEAD~N (default HEAD)"}
  },
  "required": ["path"]
}`)

// Definition implements Tool.
func (g *GitBlame) Definition() Definition {
	return Definition{Name: GitBlameName, Description: strings.TrimSpace(gitBlameDescription), Parameters: gitBlameSchema}
}

// Run implements Tool.
func (g *GitBlame) Run(ctx context.Context, input json.RawMessage) (Output, error) {
	args, err := ParseArgs[gitBlameArgs](input)
	if err != nil {
		return Output{}, err
	}
	start, end, ref, err := args.lines()
	if err != nil {
		return Output{}, err
	}
	rel, err := g.git.gitPath(args.Path)
	if err != nil {
		return Output{}, err
	}
	if rel == "." {
		return Output{}, errors.New(`"path" names the repository root; give a file, e.g. "README.md"`)
	}
	ctx, cancel := context.WithTimeout(ctx, g.git.opts.Timeout)
	defer cancel()
	if _, err := g.git.prefix(ctx); err != nil {
		return Output{}, err
	}
	sha, err := g.git.resolveCommit(ctx, ref)
	if err != nil {
		return Output{}, err
	}
	// A public path whose blob was ever at a denied path is that secret
	// under another name.
	secrets, err := g.git.secretsAt(ctx, sha)
	if err != nil {
		return Output{}, err
	}
	total, err := g.countLines(ctx, sha, rel, ref, args.Path, secrets)
	if err != nil {
		return Output{}, err
	}
	if start > total {
		return Output{}, fmt.Errorf("start %d is past the end of %s, which has %d %s at %s; use start from 1 to %d", start, rel, total, nounFor(total, "line", "lines"), ref, total)
	}
	end = min(end, total)

	out, truncated, err := g.git.output(ctx, blameOutputLimit,
		// blame's own option parser does not know --end-of-options; sha
		// is a resolved full sha and rel follows "--", so neither can be
		// an option.
		"blame", "--porcelain", "--no-textconv", "--no-ignore-revs-file",
		"-L", strconv.Itoa(start)+","+strconv.Itoa(end), sha, "--", rel)
	if err != nil {
		return Output{}, err
	}
	lines := parsePorcelain(out)
	if truncated && len(lines) > 0 {
		lines = lines[:len(lines)-1]
	}
	page := blamePage{rel: rel, ref: ref, sha: sha, start: start, end: end, total: total}
	// The lines asked for, as a person would link them: the page shown
	// may end sooner, and its footer says where to go on.
	r := Ref{Path: rel, Commit: sha}
	if args.Start > 0 {
		r.Start, r.End = args.Start, max(args.End, args.Start)
	}
	return Output{Text: page.render(lines, OutputBudget(ctx)), Refs: []Ref{r}}, nil
}

// lines checks the range and commit asked for and fills in the defaults:
// start..end, at most maxBlameLines of them, at ref.
func (a gitBlameArgs) lines() (start, end int, ref string, err error) {
	if strings.TrimSpace(a.Path) == "" {
		return 0, 0, "", errors.New(`"path" is required: the file to blame, relative to the repository root, e.g. "internal/server/server.go"`)
	}
	if a.Start < 0 || a.End < 0 {
		return 0, 0, "", fmt.Errorf(`"start" and "end" are 1-based line numbers; got start=%d, end=%d`, a.Start, a.End)
	}
	start = max(a.Start, 1)
	end = a.End
	if end == 0 {
		end = start + defaultBlameLines - 1
	}
	if end < start {
		return 0, 0, "", fmt.Errorf(`"end" (%d) is before "start" (%d); give end >= start`, end, start)
	}
	end = min(end, start+maxBlameLines-1)
	ref = strings.TrimSpace(a.Commit)
	if ref == "" {
		ref = "HEAD"
	}
	if err := checkRef(ref); err != nil {
		return 0, 0, "", err
	}
	return start, end, ref, nil
}

// blamePage is one page of a blame: lines start..end of rel's total, at
// ref, which resolved to sha.
type blamePage struct {
	rel, ref, sha     string
	start, end, total int
}

// render writes the header, the blamed lines that fit budget bytes whole,
// so the continuation below is where the model must go on, and that
// continuation.
func (p blamePage) render(lines []blameLine, budget int) string {
	header := func(last int) string {
		return fmt.Sprintf("blame of %s at %s (%s), lines %d–%d of %d\n", p.rel, p.ref, p.sha[:8], p.start, last, p.total)
	}
	budget = max(budget-len(header(p.end))-blameFooterRoom, minPageBytes)
	var body strings.Builder
	last := p.start - 1
	for _, l := range lines {
		line := strconv.Itoa(l.no) + "\t" + l.sha[:8] + " " + clipRunes(l.author, maxAuthorRunes) + " " + l.date + "\t" + blameText(l.text) + "\n"
		if body.Len()+len(line) > budget {
			if body.Len() > 0 {
				break
			}
			line = fitLine(line, budget) // one line over the whole budget
		}
		body.WriteString(line)
		last = l.no
	}
	var b strings.Builder
	b.WriteString(header(last))
	b.WriteString(body.String())
	if last < p.total {
		fmt.Fprintf(&b, "[continue with start=%d]\n", last+1)
	}
	return b.String()
}

const (
	// blameFooterRoom is kept out of the output budget for the
	// continuation line.
	blameFooterRoom = 64
	// maxAuthorRunes cuts an author name; git takes any length.
	maxAuthorRunes = 60
)

// clipRunes cuts s to n runes, marking the cut with "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// countLines reads the file's blob at sha and counts its lines, the way
// read_file counts them, so a range past the end gets an answer with the
// real length rather than git's bare refusal. cat-file takes the object
// name on stdin, where it cannot be an option, and runs no filter. A blob
// in secrets is refused as a denied file is (asked is the path as given),
// before anything about it is told.
func (g *GitBlame) countLines(ctx context.Context, sha, rel, ref, asked string, secrets *secretBlobs) (int, error) {
	var total int
	var kind, id string
	binary := false
	err := g.git.run(ctx, gitRun{
		args:  []string{"cat-file", "--batch"},
		stdin: sha + ":./" + rel + "\n",
		read: func(r io.Reader) error {
			br := bufio.NewReaderSize(r, 64<<10)
			header, err := br.ReadString('\n')
			if err != nil {
				return fmt.Errorf("read git cat-file output: %w", err)
			}
			for _, k := range []string{"missing", "ambiguous"} {
				if strings.HasSuffix(header, " "+k+"\n") {
					kind = k
					return nil
				}
			}
			fields := strings.Fields(header)
			if len(fields) != 3 {
				return fmt.Errorf("git cat-file: unexpected header %q", header)
			}
			id, kind = fields[0], fields[1]
			size, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil || kind != "blob" {
				return errStopReading
			}
			if head, _ := br.Peek(int(min(size, binarySniff))); bytes.IndexByte(head, 0) >= 0 {
				binary = true
				return errStopReading
			}
			total, err = countBlobLines(io.LimitReader(br, size))
			return err
		},
	})
	if err != nil {
		return 0, err
	}
	if kind == "blob" && secrets.has(id) {
		return 0, deniedError(asked)
	}
	switch kind {
	case "blob":
	case "tree":
		return 0, fmt.Errorf("%s is a directory at %s; blame a file in it (list_files shows what it holds)", rel, ref)
	case "missing":
		return 0, fmt.Errorf("%s does not exist at %s; check the path with glob, or find where it went with git_log and that path", rel, ref)
	default:
		return 0, fmt.Errorf("%s is not a file at %s (git reports %s)", rel, ref, kind)
	}
	if binary {
		return 0, fmt.Errorf("%s is a binary file at %s; blame works on text files only", rel, ref)
	}
	if total == 0 {
		return 0, fmt.Errorf("%s is empty at %s; there are no lines to blame", rel, ref)
	}
	return total, nil
}

// countBlobLines counts lines as read_file does: a last line without a
// newline still counts.
func countBlobLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n, last := 0, byte('\n')
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			if last != '\n' {
				n++
			}
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read blob: %w", err)
		}
	}
}

type blameLine struct {
	no                int
	sha, author, date string
	text              string
}

type blameCommit struct{ author, date string }

// parsePorcelain reads git blame --porcelain: each line is a header
// "<sha> <orig> <final> [<count>]", the commit's details the first time
// that commit appears, and the content after a tab.
func parsePorcelain(out []byte) []blameLine {
	commits := map[string]*blameCommit{}
	var lines []blameLine
	var cur *blameCommit
	var curSHA string
	var curNo int
	var atime int64
	for _, raw := range strings.Split(string(out), "\n") {
		if text, ok := strings.CutPrefix(raw, "\t"); ok {
			if cur != nil {
				lines = append(lines, blameLine{no: curNo, sha: curSHA, author: cur.author, date: cur.date, text: text})
			}
			continue
		}
		key, val, _ := strings.Cut(raw, " ")
		if isCommitSHA(key) {
			f := strings.Fields(val)
			if len(f) < 2 {
				continue
			}
			curSHA = key
			curNo, _ = strconv.Atoi(f[1])
			if cur = commits[key]; cur == nil {
				cur = &blameCommit{author: "?", date: "?"}
				commits[key] = cur
			}
			continue
		}
		if cur == nil {
			continue
		}
		switch key {
		case "author":
			cur.author = val
		case "author-time":
			atime, _ = strconv.ParseInt(val, 10, 64)
		case "author-tz":
			cur.date = time.Unix(atime, 0).In(gitTZ(val)).Format(time.DateOnly)
		}
	}
	return lines
}

// gitTZ parses git's "+0130" into a zone.
func gitTZ(s string) *time.Location {
	if len(s) != 5 {
		return time.UTC
	}
	h, err1 := strconv.Atoi(s[1:3])
	m, err2 := strconv.Atoi(s[3:5])
	if err1 != nil || err2 != nil {
		return time.UTC
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return time.FixedZone(s, off)
}

// blameText keeps one line of source within maxLineRunes, as read_file
// does, so a minified line cannot fill the context.
func blameText(s string) string {
	s = strings.TrimSuffix(s, "\r")
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= maxLineRunes {
		return s
	}
	return string([]rune(s)[:maxLineRunes]) + fmt.Sprintf(" … [line truncated at %d characters]", maxLineRunes)
}

// Summarize gives "lines 1–200 of 523".
func (g *GitBlame) Summarize(output string) string {
	first, _, _ := strings.Cut(output, "\n")
	if i := strings.LastIndex(first, "lines "); i >= 0 {
		return first[i:]
	}
	return countLines(output)
}
