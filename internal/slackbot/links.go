package slackbot

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A link's text is the model's to choose, and the model can be talked into
// anything by the files it reads: "[the official docs](https://evil.example)"
// reads the same as an honest link. Slack shows a link by its text alone, so
// showLinkHosts writes the host of every link that leaves the repository's
// web view next to it, where a reader sees it before clicking. Links whose
// text is a code citation are the citation checker's (cite.Rewrite points
// them at the verified permalink); this is the net under everything else.

// showLinkHosts makes the destination of every link in md visible unless it
// is on one of the home web views (the repository's, whose permalinks the
// answer is full of):
//
//   - an inline link or image to another host is followed by its host,
//     "[docs](https://evil.example/x) (evil.example)"; a link whose text is
//     its own URL already shows it;
//   - Slack's own link markup, <https://evil.example|README.md:1>, which
//     would show only its text, is defused into literal text (as Neutralize
//     does for mentions);
//   - a link reference definition, "[1]: https://evil.example", which would
//     turn "[README.md:1][1]" elsewhere into a link, is shown as the text it
//     is.
//
// Fenced code and inline code are left alone: Slack shows them literally.
func showLinkHosts(md string, home []string) string {
	homes := map[string]bool{}
	for _, h := range home {
		if u, err := url.Parse(h); err == nil && u.Host != "" {
			homes[strings.ToLower(u.Host)] = true
		}
	}
	var b strings.Builder
	b.Grow(len(md))
	var open *fence
	for _, line := range strings.SplitAfter(md, "\n") {
		body := strings.TrimRight(line, "\r\n")
		switch {
		case open != nil:
			if open.closes(body) {
				open = nil
			}
			b.WriteString(line)
			continue
		default:
			if f, ok := openFence(body); ok {
				open = f
				b.WriteString(line)
				continue
			}
		}
		if m := refDefRE.FindStringSubmatchIndex(body); m != nil {
			// "\[" shows as "[", and the line stops defining a link.
			b.WriteString(body[:m[2]] + `\`)
			body = body[m[2]:]
		}
		b.WriteString(inlineHosts(body, homes))
		b.WriteString(line[len(strings.TrimRight(line, "\r\n")):])
	}
	return b.String()
}

var (
	// refDefRE is a CommonMark link reference definition: up to three
	// spaces, [label], a colon. Group 1 is the opening bracket.
	refDefRE = regexp.MustCompile(`^ {0,3}(\[)(?:[^\]\\]|\\.)+\]:`)
	// slackLinkRE is Slack's <url|text> link token.
	slackLinkRE = regexp.MustCompile(`^<[A-Za-z][A-Za-z0-9+.-]*:[^\s<>|]*\|[^<>]*>`)
)

// inlineHosts applies showLinkHosts to one line outside fenced code.
func inlineHosts(s string, homes map[string]bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			b.WriteString(s[i : i+2])
			i += 2
		case c == '`':
			n := runLen(s, i, '`')
			end := closingBackticks(s, i+n, n)
			if end < 0 {
				b.WriteString(s[i : i+n])
				i += n
				continue
			}
			b.WriteString(s[i : end+n])
			i = end + n
		case c == '[' || c == '!' && strings.HasPrefix(s[i:], "!["):
			start := i
			if c == '!' {
				start++
			}
			text, dest, n, ok := parseLink(s[start:])
			if !ok {
				b.WriteString(s[i : start+1])
				i = start + 1
				continue
			}
			// The text may hold links of its own (an image inside a link).
			b.WriteString(s[i:start] + "[" + inlineHosts(text, homes) + s[start+1+len(text):start+n])
			if host, show := linkHost(text, dest, homes); show {
				b.WriteString(" (" + host + ")")
			}
			i = start + n
		case c == '<':
			if m := slackLinkRE.FindStringIndex(s[i:]); m != nil {
				b.WriteString("<" + zeroWidthSpace + s[i+1:i+m[1]])
				i += m[1]
				continue
			}
			b.WriteByte(c)
			i++
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

// closingBackticks finds the backtick run of exactly n that closes a code
// span opened before from, or -1.
func closingBackticks(s string, from, n int) int {
	for i := from; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := runLen(s, i, '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

// linkHost is what to show of a link's destination, and whether to show
// it: the host (with port) of a link that leaves the home web views, or the
// scheme of one without a host (mailto:, javascript:). A relative link
// stays in the page and shows nothing; one whose text is its own URL shows
// it already.
func linkHost(text, dest string, homes map[string]bool) (string, bool) {
	text = strings.TrimSpace(text)
	if text == dest || strings.Contains(dest, "://") && text == dest[strings.Index(dest, "://")+3:] {
		return "", false
	}
	u, err := url.Parse(dest)
	if err != nil {
		return "`" + strings.ReplaceAll(clipText(dest, 80), "`", "ˋ") + "`", true
	}
	if u.Host == "" {
		if u.Scheme == "" {
			return "", false
		}
		return strings.ToLower(u.Scheme) + ":", true
	}
	host := strings.ToLower(u.Host)
	if homes[host] {
		return "", false
	}
	// A host in another script can pass for a familiar one (a Cyrillic
	// "і" in github.com); show what it is made of.
	if !isASCII(host) {
		host = strings.Trim(strconv.QuoteToASCII(host), `"`)
	}
	return markdownEscaper.Replace(host), true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// markdownEscaper keeps a host from reading as emphasis or code.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "_", `\_`, "*", `\*`, "~", `\~`, "`", "\\`", "[", `\[`, "]", `\]`)
