package render

import (
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/mdscan"
)

// A link's text is the model's to choose, and the model can be talked into
// anything by the files it reads: "[the official docs](https://evil.example)"
// reads the same as an honest link. Slack shows a link by its text alone, so
// showLinkHosts writes the host of every link that leaves the repository's
// web view next to it, where a reader sees it before clicking. Links whose
// text is a code citation are the citation checker's (cite.Rewrite points
// them at the verified permalink); this is the net under everything else.

// showLinkHosts makes the destination of every link in md visible unless it
// is inside one of the home web views (the repository's, whose permalinks
// the answer is full of; a home is a host and a path, since its host holds
// everyone else's repositories too):
//
//   - an inline link or image to another host is followed by its host,
//     "[docs](https://evil.example/x) (evil.example)", and one to another
//     place on a home's host by host and path, "(github.com/evil/x)"; a
//     link whose text is its own URL already shows it;
//   - Slack's own link markup, <https://evil.example|README.md:1>, which
//     would show only its text, is defused into literal text (as Neutralize
//     does for mentions);
//   - an HTML element that links, <a href="…">, is defused the same way;
//   - a link reference definition, "[1]: https://evil.example", which would
//     turn "[README.md:1][1]" elsewhere into a link, is shown as the text it
//     is, also inside a block quote or list item and with a label over
//     several lines.
//
// Fenced code and inline code are left alone: Slack shows them literally.
func showLinkHosts(md string, home []string) string {
	homes := parseHomes(home)
	var b strings.Builder
	b.Grow(len(md))
	for _, l := range mdscan.Lines(md) {
		if l.Fenced {
			b.WriteString(l.Text)
			continue
		}
		body := l.Body
		if m := refDefRE().FindStringSubmatchIndex(body); m != nil {
			// "\[" shows as "[", and the line stops defining a link.
			b.WriteString(body[:m[2]] + `\`)
			body = body[m[2]:]
		} else if m := labelEndRE().FindStringSubmatchIndex(body); m != nil {
			// The end of a label begun on an earlier line: "\]" shows
			// as "]" and does not close it.
			b.WriteString(body[:m[2]] + `\`)
			body = body[m[2]:]
		}
		b.WriteString(inlineHosts(body, homes))
		b.WriteString(l.Text[len(l.Body):])
	}
	return b.String()
}

var (
	// refDefRE is a CommonMark link reference definition: [label] and a
	// colon, after indentation and any block quote and list markers (a
	// definition inside "> " or "- " defines the label for the whole
	// document). Group 1 is the opening bracket.
	refDefRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:[ \t]*(?:>[ \t]?|[-+*][ \t]+|[0-9]{1,9}[.)][ \t]+))*[ \t]*(\[)(?:[^\]\\]|\\.)+\]:`)
	})
	// labelEndRE is "]:" on a line with no "[" before it: the end of a
	// definition whose label began on an earlier line ("[r\nx]: url").
	// Group 1 is the closing bracket.
	labelEndRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[^\[\]\\]|\\.)*(\]):`) })
	// htmlLinkRE starts an HTML element that links (CommonMark passes raw
	// HTML through): <a href="https://evil.example">README.md:1</a> would
	// show only its text wherever HTML is rendered.
	htmlLinkRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^<(?i:a|area|img|form|iframe|link|base)[\s/>]`) })
	// slackLinkRE is Slack's <url|text> link token.
	slackLinkRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^<[A-Za-z][A-Za-z0-9+.-]*:[^\s<>|]*\|[^<>]*>`) })
)

// inlineHosts applies showLinkHosts to one line outside fenced code. Code
// spans, escapes and autolinks are read as cite reads them (mdscan) and
// left as written: Slack shows them as they are.
func inlineHosts(s string, homes []home) string {
	var b strings.Builder
	in := mdscan.NewInline(s)
	for i := 0; i < len(s); {
		c := s[i]
		if c == '<' {
			// Slack's own link token is an autolink to CommonMark too:
			// defuse it before it is passed over as one.
			if n := defuseTag(&b, s[i:]); n > 0 {
				i += n
				continue
			}
		}
		switch k, end := in.At(i); {
		case k != mdscan.Text:
			b.WriteString(s[i:end])
			i = end
		case c == '[' || c == '!' && strings.HasPrefix(s[i:], "!["):
			i = linkWithHost(&b, in, s, i, homes)
		default:
			_, size := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+size])
			i += size
		}
	}
	return b.String()
}

// defuseTag writes the Slack link token or linking HTML element that s
// starts with, defused, and returns its length, or 0 when s starts with
// neither.
func defuseTag(b *strings.Builder, s string) int {
	if m := slackLinkRE().FindStringIndex(s); m != nil {
		b.WriteString("<" + zeroWidthSpace + s[1:m[1]])
		return m[1]
	}
	if htmlLinkRE().MatchString(s) {
		b.WriteString("<" + zeroWidthSpace)
		return 1
	}
	return 0
}

// linkWithHost writes the link or image at s[i] followed by its host when
// that is to be shown, and returns where the scan goes on. in reads s.
func linkWithHost(b *strings.Builder, in *mdscan.Inline, s string, i int, homes []home) int {
	start := i
	if s[i] == '!' {
		start++
	}
	text, dest, n, ok := in.Link(start, len(s))
	if !ok {
		b.WriteString(s[i : start+1])
		return start + 1
	}
	// The text may hold links of its own (an image inside a link).
	b.WriteString(s[i:start] + "[" + inlineHosts(text, homes) + s[start+1+len(text):start+n])
	if host, show := linkHost(text, dest, homes); show {
		b.WriteString(" (" + host + ")")
	}
	return start + n
}

// linkHost is what to show of a link's destination, and whether to show
// it: the host (with port) of a link that leaves the home web views, or the
// scheme of one without a host (mailto:, javascript:). A relative link
// stays in the page and shows nothing; one whose text is its own URL shows
// it already.
func linkHost(text, dest string, homes []home) (string, bool) {
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
	// A host in another script can pass for a familiar one (a Cyrillic
	// "і" in github.com); show what it is made of.
	if !isASCII(host) {
		host = strings.Trim(strconv.QuoteToASCII(host), `"`)
	}
	shown := host
	for _, h := range homes {
		if h.host != strings.ToLower(u.Host) {
			continue
		}
		p := browserPath(u.Path)
		if u.User == nil && (p == h.path || strings.HasPrefix(p, h.path+"/")) {
			return "", false
		}
		// The home host holds everyone's repositories: "github.com"
		// alone would vouch for a stranger's, so show whose it is.
		shown = host + clipText(p, 60)
	}
	return markdownEscaper.Replace(shown), true
}

// home is a web view the answer's own links lead to, as host and path
// prefix: https://github.com/acme/app is github.com and /acme/app.
type home struct{ host, path string }

func parseHomes(bases []string) []home {
	var hs []home
	for _, b := range bases {
		if u, err := url.Parse(b); err == nil && u.Host != "" {
			hs = append(hs, home{strings.ToLower(u.Host), strings.TrimSuffix(browserPath(u.Path), "/")})
		}
	}
	return hs
}

// browserPath is the path a browser requests for p (decoded): "\" is a
// "/" in an http(s) URL, and dot segments are resolved, so
// /acme/app/../../evil/x is /evil/x.
func browserPath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if p == "" {
		return ""
	}
	return path.Clean("/" + p)
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
