package tools

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/askrepo/askrepo/internal/search"
)

// renderSearch writes what the model reads: a header with totals and
// notes, the matching lines grouped by file, and what to do when the
// output is not the whole story.
func renderSearch(args searchCodeArgs, scope searchScope, res search.Result, opts SearchCodeOptions, budget time.Duration, room int, notes []string) string {
	var (
		total, inFiles, shown int
		binary, huge, unread  int
		body                  []byte
		afterMatch            int // len(body) after the last match shown
		lastPath              string
		lastNo                int
		budgetHit             bool
	)
	for i, h := range res.Hits {
		if !h.Done {
			continue
		}
		switch h.Skip {
		case search.SkipBinary:
			binary++
		case search.SkipHuge:
			huge++
		case search.SkipUnreadable:
			unread++
		}
		if h.Matches == 0 {
			continue
		}
		total += h.Matches
		inFiles++
		if budgetHit || shown >= args.MaxResults {
			continue
		}
		p := res.Files[i]
		lastMatch := 0
		for _, l := range h.Lines {
			if l.Match && shown >= args.MaxResults {
				break
			}
			if !l.Match && lastMatch > 0 && l.N > lastMatch+args.Context && shown >= args.MaxResults {
				break // before-context of a match that is not shown
			}
			mark := len(body)
			if args.Context > 0 && len(body) > 0 && (p != lastPath || l.N != lastNo+1) {
				body = append(body, "--\n"...)
			}
			sep := "-"
			if l.Match {
				sep = ":"
			}
			body = append(body, p...)
			body = append(body, sep...)
			body = strconv.AppendInt(body, int64(l.N), 10)
			body = append(body, sep...)
			body = append(body, ' ')
			body = append(body, l.Text...)
			body = append(body, '\n')
			if len(body) > room && shown > 0 {
				// Whole matches only: drop this line and the context
				// written since the last match shown.
				body = body[:min(mark, afterMatch)]
				budgetHit = true
				break
			}
			if l.Match {
				shown++
				lastMatch = l.N
				afterMatch = len(body)
			}
			lastPath, lastNo = p, l.N
		}
	}

	var b strings.Builder
	timedOut := !res.Complete
	if total == 0 {
		b.WriteString(noMatches(args, scope, len(res.Files), res.Searched, timedOut))
	} else {
		fmt.Fprintf(&b, "%s in %s", countNoun(total, "match", "matches"), countNoun(inFiles, "file", "files"))
		if shown < total {
			fmt.Fprintf(&b, " (showing %d)", shown)
		}
		b.WriteByte('\n')
	}
	if timedOut {
		inside := ""
		if res.Cut > 0 {
			inside = fmt.Sprintf(" (it stopped inside %d more)", res.Cut)
		}
		fmt.Fprintf(&b, "Partial results: the search timed out after %s having searched %d of %d files%s, so there may be more matches. Narrow it with path or include, or use a pattern with a plain-text part.\n",
			budget, res.Searched, len(res.Files), inside)
	}
	if binary+huge+unread > 0 {
		var parts []string
		if binary > 0 {
			parts = append(parts, countNoun(binary, "binary file", "binary files"))
		}
		if huge > 0 {
			parts = append(parts, fmt.Sprintf("%s over %d MB", countNoun(huge, "file", "files"), opts.MaxFileSize>>20))
		}
		if unread > 0 {
			parts = append(parts, countNoun(unread, "unreadable file", "unreadable files"))
		}
		fmt.Fprintf(&b, "Skipped %s.\n", strings.Join(parts, " and "))
	}
	for _, n := range notes {
		b.WriteString("Note: " + n + "\n")
	}
	if len(body) > 0 {
		b.WriteByte('\n')
		b.Write(body)
	}
	if shown < total {
		b.WriteByte('\n')
		why := fmt.Sprintf("max_results=%d", args.MaxResults)
		if budgetHit {
			why = "the output size limit"
		}
		fmt.Fprintf(&b, "Showing %d of %d matches (cut at %s). Narrow the search with a more specific pattern, a path, or an include glob such as \"*.go\"", shown, total, why)
		if !budgetHit && args.MaxResults < maxMaxResults {
			fmt.Fprintf(&b, ", or raise max_results (up to %d)", maxMaxResults)
		}
		b.WriteString(".\n")
	}
	return b.String()
}

// noMatches says plainly that nothing matched, and what to try instead.
func noMatches(args searchCodeArgs, scope searchScope, files, searched int, timedOut bool) string {
	var b strings.Builder
	what := "pattern"
	if args.Literal {
		what = "text"
	}
	fmt.Fprintf(&b, "No matches for %s %q", what, args.Pattern)
	if timedOut {
		fmt.Fprintf(&b, " in the %d of %d files searched", searched, files)
	} else {
		fmt.Fprintf(&b, " in %s", countNoun(files, "file", "files"))
	}
	if scope.where != "" {
		fmt.Fprintf(&b, " under %s", scope.where)
	}
	if args.Include != "" {
		fmt.Fprintf(&b, " matching %q", args.Include)
	}
	b.WriteString(".\n")
	var try []string
	if !args.IgnoreCase {
		try = append(try, "ignore_case=true")
	}
	try = append(try, "a shorter or more distinctive part of the text")
	if !args.Literal && strings.ContainsAny(args.Pattern, `\.+*?()[]{}|^$`) {
		try = append(try, "literal=true if the pattern is meant as plain text")
	}
	if scope.where != "" {
		try = append(try, "a broader path (or none)")
	}
	if args.Include != "" {
		try = append(try, "no include glob")
	}
	fmt.Fprintf(&b, "Try %s.\n", strings.Join(try, ", "))
	return b.String()
}

func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
