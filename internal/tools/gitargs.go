package tools

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// The checks a git tool's arguments pass before git sees them: a commit,
// a path, free text and a date, each refused with what to give instead.

// refPattern is what a commit argument may look like: a sha, a branch or
// tag name, HEAD~2, main^2, HEAD@{1}. No spaces, no colon (that names a
// file in a tree), and the leading character is checked separately so
// that nothing can read as an option.
var refPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._/~^@{}-]+$`) })

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
	case !refPattern().MatchString(ref):
		return fmt.Errorf(`commit %q has characters no commit name has (spaces, quotes, *, ?, \); %s`, ref, hint)
	}
	return nil
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
var sincePatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`^\d{4}-\d{2}-\d{2}([ t]\d{2}:\d{2}(:\d{2})?)?$`),
		regexp.MustCompile(`^\d+[ .]*(second|minute|hour|day|week|month|year)s?([ .]+ago)?$`),
		regexp.MustCompile(`^(yesterday|today|last[ .]+(week|month|year))$`),
	}
})

func checkSince(v string) error {
	s := strings.ToLower(strings.TrimSpace(v))
	for _, p := range sincePatterns() {
		if p.MatchString(s) {
			return nil
		}
	}
	return fmt.Errorf(`"since" %q is not a date git_log understands; use a date such as "2024-01-31" or a relative one such as "2 weeks ago", "3 months ago", "yesterday"`, v)
}
