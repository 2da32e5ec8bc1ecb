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
// output is not the whole story. refs are the files whose matches it
// shows, each at its first match shown.
func renderSearch(args searchCodeArgs, scope searchScope, res search.Result, opts SearchCodeOptions, budget time.Duration, room int, notes []string) (string, []Ref) {
	m := collectMatches(args, res, room)
	var b strings.Builder
	timedOut := !res.Complete
	if m.total == 0 {
		b.WriteString(noMatches(args, scope, len(res.Files), res.Searched, timedOut))
	} else {
		fmt.Fprintf(&b, "%s in %s", countNoun(m.total, "match", "matches"), countNoun(m.inFiles, "file", "files"))
		if m.shown < m.total {
			fmt.Fprintf(&b, " (showing %d)", m.shown)
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
	writeSkipped(&b, m, opts)
	for _, n := range notes {
		b.WriteString("Note: " + n + "\n")
	}
	if len(m.body) > 0 {
		b.WriteByte('\n')
		b.Write(m.body)
	}
	if m.shown < m.total {
		b.WriteByte('\n')
		why := fmt.Sprintf("max_results=%d", args.MaxResults)
		if m.budgetHit {
			why = "the output size limit"
		}
		fmt.Fprintf(&b, "Showing %d of %d matches (cut at %s). Narrow the search with a more specific pattern, a path, or an include glob such as \"*.go\"", m.shown, m.total, why)
		if !m.budgetHit && args.MaxResults < maxMaxResults {
			fmt.Fprintf(&b, ", or raise max_results (up to %d)", maxMaxResults)
		}
		b.WriteString(".\n")
	}
	return b.String(), m.refs
}

// searchMatches is the matching lines of a search as shown, and the
// counts the header and notes need.
type searchMatches struct {
	body                 []byte
	refs                 []Ref
	total, inFiles       int
	shown                int
	binary, huge, unread int
	budgetHit            bool // the output budget, not max_results, cut the matches
}

// collectMatches writes the matching lines, with their context, that fit
// max_results and room bytes, whole matches only, and counts the rest.
func collectMatches(args searchCodeArgs, res search.Result, room int) searchMatches {
	var (
		m          searchMatches
		afterMatch int // len(m.body) after the last match shown
		lastPath   string
		lastNo     int
	)
	for i, h := range res.Hits {
		if !h.Done {
			continue
		}
		switch h.Skip {
		case search.SkipBinary:
			m.binary++
		case search.SkipHuge:
			m.huge++
		case search.SkipUnreadable:
			m.unread++
		}
		if h.Matches == 0 {
			continue
		}
		m.total += h.Matches
		m.inFiles++
		if m.budgetHit || m.shown >= args.MaxResults {
			continue
		}
		p := res.Files[i]
		lastMatch := 0
		for _, l := range h.Lines {
			if l.Match && m.shown >= args.MaxResults {
				break
			}
			if !l.Match && lastMatch > 0 && l.N > lastMatch+args.Context && m.shown >= args.MaxResults {
				break // before-context of a match that is not shown
			}
			mark := len(m.body)
			if args.Context > 0 && len(m.body) > 0 && (p != lastPath || l.N != lastNo+1) {
				m.body = append(m.body, "--\n"...)
			}
			m.body = appendSearchLine(m.body, p, l)
			if len(m.body) > room && m.shown > 0 {
				// Whole matches only: drop this line and the context
				// written since the last match shown.
				m.body = m.body[:min(mark, afterMatch)]
				m.budgetHit = true
				break
			}
			if l.Match {
				if lastMatch == 0 {
					m.refs = append(m.refs, Ref{Path: p, Start: l.N, End: l.N})
				}
				m.shown++
				lastMatch = l.N
				afterMatch = len(m.body)
			}
			lastPath, lastNo = p, l.N
		}
	}
	return m
}

// appendSearchLine appends one line as grep -n writes it: "path:N: text"
// for a match, "path-N- text" for context.
func appendSearchLine(body []byte, p string, l search.Line) []byte {
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
	return append(body, '\n')
}

// writeSkipped notes the files the search did not read, and why.
func writeSkipped(b *strings.Builder, m searchMatches, opts SearchCodeOptions) {
	if m.binary+m.huge+m.unread == 0 {
		return
	}
	var parts []string
	if m.binary > 0 {
		parts = append(parts, countNoun(m.binary, "binary file", "binary files"))
	}
	if m.huge > 0 {
		parts = append(parts, fmt.Sprintf("%s over %d MB", countNoun(m.huge, "file", "files"), opts.MaxFileSize>>20))
	}
	if m.unread > 0 {
		parts = append(parts, countNoun(m.unread, "unreadable file", "unreadable files"))
	}
	fmt.Fprintf(b, "Skipped %s.\n", strings.Join(parts, " and "))
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
