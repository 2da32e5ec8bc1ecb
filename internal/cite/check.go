package cite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/askrepo/askrepo/internal/gitexec"
)

// Checker answers how many lines a file has in the checkout at the turn's
// commit. Lines returns an error wrapping fs.ErrNotExist for a path that is
// not there and one wrapping ErrIsDir for a directory; any other error means
// the lookup itself failed, and the citation is then neither linked nor
// flagged.
type Checker interface {
	Lines(ctx context.Context, path string) (n int, err error)
}

// BatchChecker is a Checker that answers many paths at once; Check uses it
// when available, so that a whole answer costs one git process.
type BatchChecker interface {
	Checker
	// LinesBatch returns one answer per path, in order.
	LinesBatch(ctx context.Context, paths []string) []LineCount
}

// LineCount is one answer of LinesBatch, with Lines' meaning.
type LineCount struct {
	N   int
	Err error
}

// Errors a Checker or Normalize return.
var (
	ErrIsDir       = errors.New("is a directory")
	ErrInvalidPath = errors.New("not a repository-relative path")
	ErrOutside     = errors.New("leaves the repository")
)

// Result is a checked citation.
type Result struct {
	Citation        // Path is the resolved, normalised path when it exists
	Exists   bool   // the path is a file or directory at the commit
	Dir      bool   // the path is a directory
	Lines    int    // the file's line count
	Valid    bool   // the citation can be trusted: it exists and its lines are in range
	Reason   string // why it is not valid, short enough to show in the answer
	URL      string // the permalink when Valid and a web view is known
	// Skipped is set for a bare path in inline code (no line) that is not
	// in the repository and has no file extension: `net/http`,
	// `github.com/acme/lib`. Those are import paths or the like, not claims
	// about the repository, so they are neither flagged nor counted.
	Skipped bool
	// Err is set when the lookup failed (git timed out, the checkout is
	// gone). Such a citation is left as written: a warning would be a guess.
	Err error
}

// Option adjusts Check.
type Option func(*options)

type options struct {
	prefixes []string
	hidden   func(path string) bool
}

// WithHidden names paths a citation must not learn anything about: files
// on a deny-list of secrets, and links that lead to them or out of the
// checkout. A hidden path is never looked up and is judged exactly as one
// that does not exist, with the same words, so that the answer does not
// tell a reader that a secret file is there, let alone how long it is.
// hidden gets the normalised, repository-relative path and must be safe
// for concurrent use.
func WithHidden(hidden func(path string) bool) Option {
	return func(o *options) { o.hidden = hidden }
}

// WithRepoName lets citations that start with the repository's name
// (payments/internal/x.go for repository acme/payments) resolve without it.
// The path as written is tried first, since a repository may well have a
// directory of its own name.
func WithRepoName(name string) Option {
	return func(o *options) {
		name = strings.Trim(name, "/")
		if name == "" {
			return
		}
		o.prefixes = append(o.prefixes, name+"/")
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			o.prefixes = append(o.prefixes, name[i+1:]+"/")
		}
	}
}

// Normalize turns a cited path into a repository-relative one: leading "./"
// and "/" and trailing "/" go, "a//b" and "a/./b" are cleaned. A path with a
// ".." segment (ErrOutside), a control character or nothing left is refused
// with ErrInvalidPath.
func Normalize(p string) (string, error) {
	if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("%q: %w", p, ErrInvalidPath)
	}
	for {
		q := strings.TrimLeft(strings.TrimPrefix(p, "./"), "/")
		if q == p {
			break
		}
		p = q
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", fmt.Errorf("%q: %w (%w)", p, ErrOutside, ErrInvalidPath)
		}
	}
	p = path.Clean(p)
	if p == "." || p == "" {
		return "", fmt.Errorf("empty path: %w", ErrInvalidPath)
	}
	return p, nil
}

// Check looks every citation up in c and builds its permalink from web (nil
// when the repository has no known web view: citations are then validated
// but not linked). commit is the full SHA the checkout is at; links use it,
// and the flag for a missing file names its first 7 characters. Each
// distinct path is looked up once.
func Check(ctx context.Context, cs []Citation, c Checker, web *Web, commit string, opts ...Option) []Result {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	results := make([]Result, len(cs))
	candidates := make([][]string, len(cs))
	index := map[string]int{}
	var paths []string
	for i, ci := range cs {
		results[i].Citation = ci
		p, err := Normalize(ci.Path)
		if err != nil {
			results[i].Reason = "not a valid path"
			if errors.Is(err, ErrOutside) {
				// Worded as a missing file: "outside" would confirm
				// that the answer named something beyond the checkout.
				results[i].Reason = missingReason(commit)
			}
			results[i].Skipped = ci.Start == 0 && !knownFile(ci.Path)
			continue
		}
		cands := []string{p}
		for _, pre := range o.prefixes {
			if rest, ok := strings.CutPrefix(p, pre); ok && rest != "" {
				cands = append(cands, rest)
			}
		}
		candidates[i] = cands
		for _, q := range cands {
			if _, seen := index[q]; !seen {
				index[q] = len(paths)
				paths = append(paths, q)
			}
		}
	}
	answers := lookup(ctx, c, paths, o.hidden)
	for i := range cs {
		if candidates[i] == nil {
			continue
		}
		r := &results[i]
		var first LineCount
		found := -1
		for k, q := range candidates[i] {
			a := answers[index[q]]
			if k == 0 {
				first = a
			}
			if a.Err == nil || errors.Is(a.Err, ErrIsDir) {
				found = k
				r.Path = q
				first = a
				break
			}
		}
		if found < 0 && first.Err != nil && !errors.Is(first.Err, fs.ErrNotExist) {
			r.Path = candidates[i][0]
			r.Err = first.Err
			r.Reason = "could not be checked"
			continue
		}
		judge(r, found >= 0, first, web, commit)
	}
	return results
}

// lookup answers every path, hidden ones as missing without asking c.
func lookup(ctx context.Context, c Checker, paths []string, hidden func(string) bool) []LineCount {
	a := make([]LineCount, len(paths))
	var ask []string
	var at []int
	for i, p := range paths {
		if hidden != nil && hidden(p) {
			a[i].Err = &fs.PathError{Op: "lines", Path: p, Err: fs.ErrNotExist}
			continue
		}
		ask = append(ask, p)
		at = append(at, i)
	}
	if len(ask) == 0 {
		return a
	}
	if b, ok := c.(BatchChecker); ok {
		if got := b.LinesBatch(ctx, ask); len(got) == len(ask) {
			for k, i := range at {
				a[i] = got[k]
			}
			return a
		}
	}
	for k, p := range ask {
		a[at[k]].N, a[at[k]].Err = c.Lines(ctx, p)
	}
	return a
}

func judge(r *Result, exists bool, a LineCount, web *Web, commit string) {
	if !exists {
		if r.Start == 0 && !knownFile(r.Path) {
			r.Skipped = true
		}
		r.Reason = missingReason(commit)
		return
	}
	r.Exists = true
	if errors.Is(a.Err, ErrIsDir) {
		r.Dir = true
		if r.Start > 0 {
			r.Reason = "a directory, not a file"
			return
		}
		r.Valid = true
		if web != nil {
			r.URL = web.TreeLink(commit, r.Path)
		}
		return
	}
	r.Lines = a.N
	switch {
	case r.Start > 0 && r.End < r.Start:
		r.Reason = fmt.Sprintf("the range %d-%d runs backwards", r.Start, r.End)
		return
	case r.Start > a.N:
		r.Reason = fmt.Sprintf("line %d is past the end: %s", r.Start, lineCount(a.N))
		return
	case r.End > a.N:
		r.Reason = fmt.Sprintf("lines %d-%d run past the end: %s", r.Start, r.End, lineCount(a.N))
		return
	}
	r.Valid = true
	if web != nil {
		r.URL = web.Permalink(commit, r.Path, r.Start, r.End)
	}
}

// missingReason is the one wording for every path that is not a file of
// the repository, whatever the cause: missing, hidden or outside.
func missingReason(commit string) string {
	if commit == "" {
		return "not in the repository"
	}
	return "not in repo@" + gitexec.ShortCommit(commit)
}

func lineCount(n int) string {
	switch n {
	case 0:
		return "the file is empty"
	case 1:
		return "1 line"
	}
	return strconv.Itoa(n) + " lines"
}

// Summary counts valid citations and those flagged as wrong; skipped ones
// and ones that could not be checked are neither.
func Summary(results []Result) (valid, invalid int) {
	for _, r := range results {
		switch {
		case r.Valid:
			valid++
		case flagged(r):
			invalid++
		}
	}
	return valid, invalid
}

func flagged(r Result) bool {
	return !r.Valid && !r.Skipped && r.Err == nil && r.Reason != ""
}
