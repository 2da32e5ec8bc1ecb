package repos

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/gitexec"
	"github.com/askrepo/askrepo/internal/tools"
)

// Checked is an answer whose citations were checked against a lease.
type Checked struct {
	// Markdown is the answer with its citations rewritten (cite.Rewrite).
	Markdown string
	// Results are its citations as checked, none when it cites nothing.
	Results []cite.Result
	// Valid and Invalid count them (cite.Summary).
	Valid, Invalid int
	// Notes say what a reader of the citations must know that the links
	// cannot show (uncommitted changes in cited files, a commit the web
	// view cannot have), for the footer under the answer.
	Notes []string
}

// CheckAnswer checks every citation in markdown against the lease's
// checkout and rewrites them (cite.Rewrite): the ones that exist become
// permalinks to the web view at the lease's commit, the ones that do not
// (a path that is not there, a line past the end) are flagged visibly and
// never linked.
//
// A url repository's checkout is read from git at the lease's commit, so a
// citation is judged against exactly the code the turn saw. A local path is
// judged by its files as they are on disk, which is what the tools read;
// a citation is linked only when its file is unchanged since the commit
// and the commit is on a remote-tracking branch, so that no link leads to
// other lines or to a commit the web view never got, and Notes say why
// the others are not. When the checkout cannot be read at all, the error
// comes back with markdown unchanged: an answer without links beats no
// answer.
//
// The Slack answer and the terminal both go through here, so a citation
// reads the same wherever it is shown.
func (l *Lease) CheckAnswer(ctx context.Context, markdown string) (Checked, error) {
	c := Checked{Markdown: markdown}
	cs := cite.Find(markdown)
	if len(cs) == 0 {
		return c, nil
	}
	results, err := l.check(ctx, cs)
	if err != nil {
		return c, err
	}
	if l.local && l.Commit != "" {
		c.Notes = l.keepLinks(ctx, results)
	}
	c.Results = results
	c.Valid, c.Invalid = cite.Summary(results)
	c.Markdown = cite.Rewrite(markdown, results)
	return c, nil
}

// Cite is CheckAnswer for a caller that needs only the rewritten answer
// and the counts.
func (l *Lease) Cite(ctx context.Context, markdown string) (out string, valid, invalid int, err error) {
	c, err := l.CheckAnswer(ctx, markdown)
	return c.Markdown, c.Valid, c.Invalid, err
}

// Check is CheckAnswer's checked citations alone.
func (l *Lease) Check(ctx context.Context, markdown string) ([]cite.Result, error) {
	c, err := l.CheckAnswer(ctx, markdown)
	return c.Results, err
}

func (l *Lease) check(ctx context.Context, cs []cite.Citation) ([]cite.Result, error) {
	var checker cite.Checker
	var err error
	if l.Commit != "" && !l.local {
		var g *cite.GitChecker
		var gerr error
		if l.Workspace != nil {
			// The repository the workspace found and checked, never
			// one git would discover again from the directory.
			var git gitexec.Git
			if git, gerr = l.Workspace.Git(ctx); gerr == nil {
				g, gerr = cite.NewGitCheckerFor(ctx, git, l.Commit)
			}
		} else {
			g, gerr = cite.NewGitChecker(ctx, l.Dir, l.Commit)
		}
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
	return cite.Check(ctx, cs, checker, web, l.Commit, cite.WithRepoName(l.Name), cite.WithHidden(l.hidden(ctx))), nil
}

// hidden reports whether a cited path is one the tools would refuse to
// show: on the deny-list (itself or through a directory), or a symlink
// that leads to such a file or out of the checkout. A citation of it reads
// exactly like one of a file that is not there; "line 7 is past the end:
// 1 line" would tell the channel that a secret file exists and how long
// it is. The Workspace is the one judge of that, so the citations follow
// the deny-list the tools follow, whatever it is configured to hold.
func (l *Lease) hidden(ctx context.Context) func(p string) bool {
	ws := l.Workspace
	if ws == nil {
		return func(string) bool { return false }
	}
	// Opened as read_file opens it: a secret's content under a public
	// name is as hidden as the secret, and so is every file while the
	// history cannot tell which content is secret. The secret blobs are
	// read once for all the answer's citations.
	content := ws.ContentCheck(ctx)
	return func(p string) bool {
		if ws.Denied(p) {
			return true
		}
		err := content(p)
		return errors.Is(err, tools.ErrDenied) || errors.Is(err, tools.ErrOutside) || errors.Is(err, tools.ErrSecretsUnknown)
	}
}

// keepLinks unlinks the results of a local checkout that a link would
// misrepresent and returns the notes that say so: a file with uncommitted
// changes (its lines may not be the commit's), and every link when the
// commit is on no remote-tracking branch (the web view may not have it).
func (l *Lease) keepLinks(ctx context.Context, results []cite.Result) []string {
	sha := gitexec.ShortCommit(l.Commit)
	var files []string
	seen := map[string]bool{}
	linked := false
	for _, r := range results {
		linked = linked || r.URL != ""
		if r.Exists && !r.Dir && !seen[r.Path] {
			seen[r.Path] = true
			files = append(files, r.Path)
		}
	}
	var notes []string
	changed, err := l.changedSince(ctx, files)
	switch {
	case err != nil:
		notes = append(notes, "could not compare the cited files with "+sha+"; citations are checked but not linked")
		unlink(results, nil)
		return notes
	case len(changed) > 0:
		notes = append(notes, "uncommitted changes in cited files: lines may differ from "+sha)
		unlink(results, changed)
	}
	if linked && l.unpushed != "" {
		notes = append(notes, l.unpushed)
		unlink(results, nil)
	}
	return notes
}

// unlink drops the permalinks of results whose path is in paths, or of
// all of them when paths is nil.
func unlink(results []cite.Result, paths map[string]bool) {
	for i := range results {
		if paths == nil || paths[results[i].Path] {
			results[i].URL = ""
		}
	}
}

// pushedNote is "" when the lease's commit is on a remote-tracking
// branch, so the web view can show it, and otherwise the note that says
// why nothing is linked: a local commit that was never pushed (or a
// checkout with no remote at all) is not on the web view. Remote-tracking
// refs are only as fresh as the last fetch, so a commit pushed from
// elsewhere may count as not pushed: that costs links, never a link to
// nothing.
func (l *Lease) pushedNote(ctx context.Context) string {
	sha := gitexec.ShortCommit(l.Commit)
	out, err := l.git.run(ctx, "for-each-ref", "--count=1", "--format=%(refname)", "--contains", l.Commit, "refs/remotes/")
	switch {
	case err != nil:
		return "could not tell whether commit " + sha + " is pushed; citations are checked but not linked"
	case out == "":
		return "local commit " + sha + " is not pushed; citations are checked but not linked"
	}
	return ""
}

// changedSince returns the files (repository-relative, as checked) whose
// content on disk is not their blob at the lease's commit, new files
// included. It compares the bytes on disk with the commit's blob ids from
// git ls-tree and hashes the files itself: git status or diff-files
// would run the clean filters a hostile checkout's config may name. A
// file that git converts on checkout (line endings, filters) counts as
// changed, which costs its link, never a wrong one.
func (l *Lease) changedSince(ctx context.Context, files []string) (map[string]bool, error) {
	if len(files) == 0 {
		return nil, nil
	}
	// Literal pathspecs: a cited name such as ":(glob)**" is a name.
	args := append([]string{"--literal-pathspecs", "ls-tree", "-z", l.Commit, "--"}, files...)
	out, err := l.git.run(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("list cited files at %s: %w", gitexec.ShortCommit(l.Commit), err)
	}
	blobs := map[string]string{} // path → object id, for blobs and symlinks
	links := map[string]bool{}
	for entry := range strings.SplitSeq(out, "\x00") {
		meta, path, ok := strings.Cut(entry, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" {
			continue
		}
		blobs[path] = f[2]
		links[path] = f[0] == "120000"
	}
	changed := map[string]bool{}
	for _, p := range files {
		id, ok := blobs[p]
		if !ok {
			changed[p] = true // not at the commit: new since
			continue
		}
		same, err := l.sameBlob(p, id, links[p])
		if err != nil {
			return nil, err
		}
		if !same {
			changed[p] = true
		}
	}
	return changed, nil
}

// sameBlob reports whether the file at p on disk hashes to the git object
// id, in the repository's hash (SHA-1, or SHA-256 for a 64-digit id). For
// a symlink at the commit, the blob is the link's target.
func (l *Lease) sameBlob(p, id string, symlink bool) (bool, error) {
	var h hash.Hash
	switch len(id) {
	case sha1.Size * 2:
		h = sha1.New()
	case sha256.Size * 2:
		h = sha256.New()
	default:
		return false, fmt.Errorf("git gave %q as the object id of %s", id, p)
	}
	blob := func(size int64) { io.WriteString(h, "blob "+strconv.FormatInt(size, 10)+"\x00") }
	if symlink {
		// The target is only hashed and compared, never shown.
		target, err := os.Readlink(filepath.Join(l.Dir, filepath.FromSlash(p)))
		if err != nil {
			return false, nil // no longer a symlink: not the commit's
		}
		blob(int64(len(target)))
		io.WriteString(h, filepath.ToSlash(target))
		return hex.EncodeToString(h.Sum(nil)) == id, nil
	}
	f, fi, err := l.Workspace.Open(p)
	if err != nil {
		return false, nil // gone or refused since the check: not the commit's
	}
	defer f.Close()
	blob(fi.Size())
	if n, err := io.Copy(h, f); err != nil || n != fi.Size() {
		return false, nil // changing while read: not the commit's
	}
	return hex.EncodeToString(h.Sum(nil)) == id, nil
}

// Permalink is the web view's link to path at the lease's commit, with
// lines start-end highlighted (start 0: the whole file), or to a directory
// when dir is set. It is "" when the repository has no web view, the
// checkout has no commit or its commit is not pushed, a local checkout's
// file differs from the commit's, or path is not a repository-relative
// path. It does not check that path exists: callers link what a tool has
// just read.
func (l *Lease) Permalink(ctx context.Context, path string, start, end int, dir bool) string {
	p, err := cite.Normalize(path)
	if err != nil {
		if path == "" || path == "." || path == "/" || path == "./" {
			p = ""
		} else {
			return ""
		}
	}
	if l.Web.Base == "" || l.Commit == "" || l.unpushed != "" {
		return ""
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
	if l.local {
		// What a tool read from disk is only the commit's when unchanged.
		if changed, err := l.changedSince(ctx, []string{p}); err != nil || changed[p] {
			return ""
		}
	}
	return l.Web.Permalink(l.Commit, p, start, end)
}
