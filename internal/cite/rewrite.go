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
//   - skipped citations, ones that could not be checked, and citations in
//     tables (shown preformatted) are not linked; wrong ones among them are
//     still flagged;
//   - a link (or image) the model wrote whose text is a citation never
//     keeps a destination of the model's choosing, which could lead
//     anywhere under a label that looks verified: a valid one points at the
//     permalink, and any other is reduced to the citation as inline code
//     (flagged when wrong). Only a skipped one (an import path) keeps its link.
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
		if r.Linked {
			if s, ok := relink(r, markdown[end:]); ok {
				writeBefore(&b, markdown[last:r.Offset], s)
				b.WriteString(s)
				last = end
			}
			continue
		}
		switch {
		case r.Valid && r.URL != "" && !r.InTable:
			s := "[" + escapeLabel(r.Citation.String()) + "](" + r.URL + ")"
			writeBefore(&b, markdown[last:r.Offset], s)
			b.WriteString(s)
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

// writeBefore writes the text before a replacement; a "!" right before a
// link would make it an image, so it is escaped.
func writeBefore(b *strings.Builder, before, repl string) {
	if strings.HasPrefix(repl, "[") && strings.HasSuffix(before, "!") && !strings.HasSuffix(before, `\!`) {
		b.WriteString(before[:len(before)-1] + `\!`)
		return
	}
	b.WriteString(before)
}

// relink is what a link whose text is a citation becomes, and false when
// it stays as written: a valid citation's link to its permalink, the text
// alone as code (flagged if wrong) for any other, and a skipped one unchanged.
func relink(r Result, after string) (string, bool) {
	image := strings.HasPrefix(r.Raw, "!")
	switch {
	case r.Skipped:
		return "", false
	case r.Valid && r.URL != "":
		if r.Dest == r.URL && !image {
			return "", false
		}
		return "[" + escapeLabel(r.Citation.String()) + "](" + r.URL + ")", true
	}
	// As inline code the citation cannot run into the prose around it and
	// read differently the next time the answer is checked.
	text := codeSpan(r.Citation.String())
	if flagged(r) && !strings.HasPrefix(after, flagMark) {
		text += flagMark + r.Reason + ")_"
	}
	return text, true
}

// codeSpan is s as an inline code span, with a backtick run longer than
// any inside it.
func codeSpan(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// escapeLabel backslash-escapes what Markdown would read as emphasis, code
// or link syntax in a path: internal/_gen_/x.go must not turn italic.
var escapeLabel = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "~", `\~`, "[", `\[`, "]", `\]`).Replace
