package repos

import (
	"context"
	"errors"
	"fmt"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/tools"
)

// Cite checks every citation in markdown against the lease's checkout at
// its commit and rewrites them (cite.Rewrite): the ones that exist become
// permalinks to the web view at that commit, the ones that do not (a path
// that is not there, a line past the end) are flagged visibly and never
// linked. valid and invalid count them (cite.Summary).
//
// A checkout with a commit is read from git at that commit, so a citation
// is judged against exactly the code the turn saw; one without (a local
// path that is not a git checkout), or whose git cannot be read, from its
// files. When neither can be read, markdown comes back unchanged with the
// error: an answer without links beats no answer.
//
// The Slack answer and the terminal both go through here, so a citation
// reads the same wherever it is shown.
func (l *Lease) Cite(ctx context.Context, markdown string) (out string, valid, invalid int, err error) {
	results, err := l.Check(ctx, markdown)
	if err != nil || len(results) == 0 {
		return markdown, 0, 0, err
	}
	valid, invalid = cite.Summary(results)
	return cite.Rewrite(markdown, results), valid, invalid, nil
}

// Check is Cite without the rewriting: the checked citations of markdown,
// none when it cites nothing, for a reader that shows them apart from the
// text (the terminal, which prints an answer as it is written).
func (l *Lease) Check(ctx context.Context, markdown string) ([]cite.Result, error) {
	cs := cite.Find(markdown)
	if len(cs) == 0 {
		return nil, nil
	}
	var checker cite.Checker
	var err error
	if l.Commit != "" {
		g, gerr := cite.NewGitChecker(ctx, l.Dir, l.Commit)
		if gerr == nil {
			checker = g
		} else {
			err = gerr
		}
	}
	if checker == nil {
		f, ferr := cite.NewFSChecker(l.Dir)
		if ferr != nil {
			if err != nil {
				ferr = fmt.Errorf("%w (and %w)", err, ferr)
			}
			return nil, fmt.Errorf("check citations in %s: %w", l.Name, ferr)
		}
		defer f.Close()
		checker = f
	}
	var web *cite.Web
	if l.Web.Base != "" {
		web = &l.Web
	}
	return cite.Check(ctx, cs, checker, web, l.Commit, cite.WithRepoName(l.Name), cite.WithHidden(l.hidden)), nil
}

// hidden reports whether a cited path is one the tools would refuse to
// show: on the deny-list (itself or through a directory), or a symlink
// that leads to such a file or out of the checkout. A citation of it reads
// exactly like one of a file that is not there; "line 7 is past the end:
// 1 line" would tell the channel that a secret file exists and how long
// it is. The Workspace is the one judge of that, so the citations follow
// the deny-list the tools follow, whatever it is configured to hold.
func (l *Lease) hidden(p string) bool {
	ws := l.Workspace
	if ws == nil {
		return false
	}
	if ws.Denied(p) {
		return true
	}
	f, _, err := ws.Open(p)
	if err == nil {
		f.Close()
		return false
	}
	return errors.Is(err, tools.ErrDenied) || errors.Is(err, tools.ErrOutside)
}

// Permalink is the web view's link to path at the lease's commit, with
// lines start-end highlighted (start 0: the whole file), or to a directory
// when dir is set. It is "" when the repository has no web view, the
// checkout has no commit, or path is not a repository-relative path. It
// does not check that path exists: callers link what a tool has just read.
func (l *Lease) Permalink(path string, start, end int, dir bool) string {
	p, err := cite.Normalize(path)
	if err != nil {
		if path == "" || path == "." || path == "/" || path == "./" {
			p = ""
		} else {
			return ""
		}
	}
	if dir {
		if p == "" {
			return l.Web.TreeLink(l.Commit, "")
		}
		return l.Web.TreeLink(l.Commit, p)
	}
	if p == "" {
		return ""
	}
	return l.Web.Permalink(l.Commit, p, start, end)
}
