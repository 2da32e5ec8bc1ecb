package cite

import (
	"sort"
	"strings"
)

// flagMark starts every flag Rewrite adds; finding it right after a
// citation is how a second Rewrite knows not to flag again.
const flagMark = " ⚠️ _("

// Rewrite applies checked citations to the Markdown they were found in:
//
//   - a valid citation with a URL becomes a link, [path:10-20](permalink);
//     an inline code span holding it is replaced whole, since Slack shows
//     no link inside code;
//   - a valid citation without a URL (no web view) stays as written;
//   - a citation that is wrong stays as written, unlinked, followed by a
//     visible flag: `x.go:999` ⚠️ _(line 999 is past the end: 120 lines)_;
//   - skipped citations, ones that could not be checked, links the model
//     wrote that check out, and citations in tables (shown preformatted) are
//     not linked; wrong ones among them are still flagged.
//
// Results whose Raw is no longer at Offset in markdown are ignored, fenced
// code is never touched (Find never reports it), and running Find, Check and
// Rewrite again on the output changes nothing.
func Rewrite(markdown string, results []Result) string {
	rs := make([]Result, 0, len(results))
	for _, r := range results {
		if r.Raw != "" && r.Offset >= 0 && r.Offset+len(r.Raw) <= len(markdown) &&
			markdown[r.Offset:r.Offset+len(r.Raw)] == r.Raw {
			rs = append(rs, r)
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
	var b strings.Builder
	b.Grow(len(markdown) + 128*len(rs))
	last := 0
	for _, r := range rs {
		if r.Offset < last {
			continue // overlaps one already applied
		}
		end := r.Offset + len(r.Raw)
		switch {
		case r.Valid && r.URL != "" && !r.Linked && !r.InTable:
			b.WriteString(markdown[last:r.Offset])
			b.WriteString("[" + escapeLabel(r.Citation.String()) + "](" + r.URL + ")")
			last = end
		case flagged(r) && !strings.HasPrefix(markdown[end:], flagMark):
			b.WriteString(markdown[last:end])
			b.WriteString(flagMark + r.Reason + ")_")
			last = end
		}
	}
	b.WriteString(markdown[last:])
	return b.String()
}

// escapeLabel backslash-escapes what Markdown would read as emphasis, code
// or link syntax in a path: internal/_gen_/x.go must not turn italic.
var escapeLabel = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "~", `\~`, "[", `\[`, "]", `\]`).Replace
