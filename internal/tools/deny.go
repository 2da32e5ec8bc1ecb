package tools

import (
	"fmt"
	"math/bits"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultDeny lists files inside a checkout that may hold secrets. The wall
// of the Workspace keeps the model out of other directories, but a checkout
// can itself contain an .env someone forgot to ignore, a deploy key, a
// Terraform state or the credentials a CLI keeps in a dot directory; none of
// those should ever reach a model or a Slack thread. The README lists these
// patterns (a test keeps the two equal): change both together.
//
// Patterns follow .gitignore: a pattern without a slash matches a name at any
// depth, a trailing slash names a directory (everything beneath it is denied),
// a pattern with a slash inside is matched against the whole path from the
// root, "**" crosses directories, and "!" re-allows what an earlier pattern
// denied (the last matching pattern wins). Matching ignores case: on a
// case-insensitive file system ".ENV" opens .env, and a key saved as
// "ID_RSA" is still a key.
//
// A pattern without a slash also matches a directory of that name, and so
// denies all it holds: a name such as "kubeconfig" (also a Go package
// directory in Kubernetes code) is therefore only listed with an extension.
// Every default stays on the fast path of denyPattern.kind: a name, one "*",
// or "**/" and a plain path.
var DefaultDeny = []string{
	// Environment files: the usual home of API keys and passwords. The
	// example committed next to them is meant to be read.
	".env",
	".env.*",
	"!.env.example",
	// Private keys and certificates (a .pem is often a key), SSH keys by
	// their default names (the .pub beside them goes too: better than
	// guessing which half a file is), PuTTY keys.
	"*.pem",
	"*.key",
	"*.ppk",
	"id_rsa*",
	"id_dsa*",
	"id_ecdsa*",
	"id_ed25519*",
	// Keystores: Java, PKCS#12, Windows, Android signing keys.
	"*.p12",
	"*.pfx",
	"*.jks",
	"*.keystore",
	// git's own directory holds remote URLs with tokens and credential
	// helpers' settings; .git-credentials is the store helper's file.
	".git/",
	".git-credentials",
	// Passwords for machines, databases and package registries, and web
	// server password files.
	".netrc",
	"_netrc",
	".pgpass",
	".npmrc",
	".pypirc",
	".htpasswd",
	"htpasswd",
	// Terraform state holds every secret a plan touched, in clear; the
	// .terraform directory keeps a copy of the backend's configuration.
	"*.tfstate",
	"*.tfstate.backup",
	".terraform/",
	// Cloud CLIs: AWS and Azure keep credentials and tokens in their dot
	// directory; gcloud in its config directory and the application
	// default credentials file; OAuth client secrets are credentials*.json.
	".aws/",
	".azure/",
	"**/.config/gcloud/",
	"application_default_credentials.json",
	"credentials*.json",
	// Service-account keys as Google's and most teams' docs name them.
	"service-account*.json",
	"*-sa-key.json",
	// Kubernetes client configurations carry cluster tokens and client keys.
	"**/.kube/config",
	"*.kubeconfig",
	"kubeconfig.yaml",
	"kubeconfig.yml",
	// Docker registry logins.
	"**/.docker/config.json",
	".dockercfg",
	// Files named for their secrets (Rails, Ansible, Helm and others).
	"secrets.yml",
	"secrets.yaml",
}

// denyPattern is one parsed deny-list line.
type denyPattern struct {
	glob     string // without "!" and trailing "/"
	negate   bool
	anchored bool // contains a slash: matched against the whole path

	// Every path of a listing is matched against every pattern, once per
	// path element, and a general glob match costs about 100ns: half the
	// cost of listing a large checkout. Nearly all deny patterns are a
	// name, "prefix*", "*suffix", "prefix*suffix" or "**/a/path", which
	// are compared as strings instead; the rest go to doublestar.
	kind           denyKind
	prefix, suffix string // the text around the one "*" (all of it for denyExact; the path after "**/" for denyTail)
}

type denyKind uint8

const (
	denyGlob  denyKind = iota // anything else: doublestar decides
	denyExact                 // no wildcard: the whole string
	denyAffix                 // prefix*suffix, either part possibly empty
	denyTail                  // "**/" and a plain path: that path at any depth
)

// denyList answers whether a path is refused. Patterns are stored, and
// paths compared, case-folded (foldCase). It is immutable once built, so it
// is safe for concurrent use.
type denyList []denyPattern

func parseDeny(lines []string) (denyList, error) {
	var out denyList
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := denyPattern{}
		if strings.HasPrefix(line, "!") {
			p.negate = true
			line = line[1:]
		}
		line = strings.TrimSuffix(line, "/")
		if strings.HasPrefix(line, "/") {
			p.anchored = true
			line = strings.TrimPrefix(line, "/")
		}
		if strings.Contains(line, "/") {
			p.anchored = true
		}
		if line == "" || !doublestar.ValidatePattern(line) {
			return nil, fmt.Errorf("deny pattern %q is not a valid glob", line)
		}
		p.glob = foldCase(line)
		p.kind, p.prefix, p.suffix = classifyGlob(p.glob)
		out = append(out, p)
	}
	return out, nil
}

// denied reports whether rel (clean, slash-separated, relative) or any of
// its parent directories is denied. Checking every prefix is what makes a
// ".git/" entry cover ".git/config" and "secrets/" cover everything inside.
func (d denyList) denied(rel string) bool {
	if len(d) == 0 || rel == "." || rel == "" {
		return false
	}
	rel = foldCase(rel)
	for i := 0; ; {
		j := strings.IndexByte(rel[i:], '/')
		end := len(rel)
		if j >= 0 {
			end = i + j
		}
		if d.match(rel[:end], rel[i:end]) {
			return true
		}
		if j < 0 {
			return false
		}
		i = end + 1
	}
}

// match applies the patterns to one path (full is the path from the root,
// base its last element); the last matching pattern decides, so the list
// is scanned from the end and stops at the first match.
func (d denyList) match(full, base string) bool {
	for i := len(d) - 1; i >= 0; i-- {
		if matched, denied := d[i].decides(full, base); matched {
			return denied
		}
	}
	return false
}

// decides matches the pattern against a path, its full form when the
// pattern is anchored, else its last element, and says whether it
// matched and, if so, whether it denies the path or lets it through.
func (p *denyPattern) decides(full, base string) (matched, denied bool) {
	s := base
	if p.anchored {
		s = full
	}
	if p.matches(s) {
		return true, !p.negate
	}
	return false, false
}

// matches reports whether the pattern's glob matches s, as
// doublestar.MatchUnvalidated would.
func (p *denyPattern) matches(s string) bool {
	switch p.kind {
	case denyExact:
		return s == p.prefix
	case denyAffix:
		// "*" matches any run of characters other than "/".
		return len(s) >= len(p.prefix)+len(p.suffix) &&
			strings.HasPrefix(s, p.prefix) && strings.HasSuffix(s, p.suffix) &&
			strings.IndexByte(s[len(p.prefix):len(s)-len(p.suffix)], '/') < 0
	case denyTail:
		// "**/" matches nothing or any run of whole directories.
		return s == p.suffix ||
			len(s) > len(p.suffix) && strings.HasSuffix(s, p.suffix) && s[len(s)-len(p.suffix)-1] == '/'
	}
	return doublestar.MatchUnvalidated(p.glob, s)
}

// classifyGlob finds the string comparison a glob amounts to, if any: no
// special character at all (an exact name), a single "*" with plain text
// around it, or "**/" before a plain path. Any other syntax (?, [...],
// {...}, \, "**" elsewhere) stays a glob, and so does text that is not
// valid UTF-8 or holds U+FFFD: doublestar compares runes, and every invalid
// byte decodes to U+FFFD.
func classifyGlob(glob string) (kind denyKind, prefix, suffix string) {
	if strings.ContainsAny(glob, "?[]{}\\\uFFFD") || !utf8.ValidString(glob) {
		return denyGlob, "", ""
	}
	if tail, ok := strings.CutPrefix(glob, "**/"); ok {
		if tail == "" || strings.Contains(tail, "*") || strings.HasPrefix(tail, "/") || strings.Contains(tail, "//") {
			return denyGlob, "", ""
		}
		return denyTail, "", tail
	}
	switch strings.Count(glob, "*") {
	case 0:
		return denyExact, glob, ""
	case 1:
		prefix, suffix, _ = strings.Cut(glob, "*")
		return denyAffix, prefix, suffix
	}
	return denyGlob, "", ""
}

// denyIndex answers like denyList.denied, for listings that check every
// path of a checkout. Most path elements ("net", "http", "server.go") cannot
// match any pattern, and one table lookup on their first and last byte says
// so: a pattern with a fixed first byte only matches names starting with it,
// one like "*.pem" only names ending in "m". The rest (globs, "*") are
// always tried. It is immutable once built and safe for concurrent use.
type denyIndex struct {
	list denyList
	// Bit i stands for list[i]: the patterns that may match a name with
	// this first byte (unanchored ones), a whole path with this first
	// byte (anchored ones), or either with this last byte.
	baseFirst, fullFirst, last [256]uint64
	always                     uint64
	all                        bool // more patterns than bits: try every one
}

func newDenyIndex(d denyList) *denyIndex {
	x := &denyIndex{list: d, all: len(d) > 64}
	for i := range d {
		if x.all {
			break
		}
		p := &d[i]
		bit := uint64(1) << i
		switch {
		case p.kind != denyGlob && p.prefix != "" && p.anchored:
			setBothCases(&x.fullFirst, p.prefix[0], bit)
		case p.kind != denyGlob && p.prefix != "":
			setBothCases(&x.baseFirst, p.prefix[0], bit)
		case (p.kind == denyAffix || p.kind == denyTail) && p.suffix != "":
			// The last byte of a whole path is its last element's.
			setBothCases(&x.last, p.suffix[len(p.suffix)-1], bit)
		default:
			x.always |= bit
		}
	}
	return x
}

// setBothCases marks the patterns whose (folded) text has byte c there
// under c and, for a letter, its upper case: an ASCII path is looked up
// as it is and folded only when some pattern may match it.
func setBothCases(table *[256]uint64, c byte, bit uint64) {
	table[c] |= bit
	if 'a' <= c && c <= 'z' {
		table[c-'a'+'A'] |= bit
	}
}

// denied is denyList.denied.
func (x *denyIndex) denied(rel string) bool {
	if x.all {
		return x.list.denied(rel)
	}
	if len(x.list) == 0 || rel == "." || rel == "" {
		return false
	}
	// Folding keeps the offsets of an ASCII path, so one is folded (and
	// copied, when it has capitals) only once a pattern may match it;
	// any other path is folded first and looked up folded.
	folded := ""
	if !isASCII(rel) {
		rel = foldCase(rel)
		folded = rel
	}
	fullFirst := x.always | x.fullFirst[rel[0]]
	for i := 0; ; {
		j := strings.IndexByte(rel[i:], '/')
		end := len(rel)
		if j >= 0 {
			end = i + j
		}
		if end > i {
			mask := fullFirst | x.baseFirst[rel[i]] | x.last[rel[end-1]]
			if mask != 0 {
				if folded == "" {
					folded = foldCase(rel)
				}
				if x.match(mask, folded[:end], folded[i:end]) {
					return true
				}
			}
		} else if x.list.match(foldCase(rel[:end]), "") {
			return true
		}
		if j < 0 {
			return false
		}
		i = end + 1
	}
}

// match is denyList.match over the candidates in mask, the last first.
func (x *denyIndex) match(mask uint64, full, base string) bool {
	for mask != 0 {
		i := 63 - bits.LeadingZeros64(mask)
		mask &^= 1 << i
		if matched, denied := x.list[i].decides(full, base); matched {
			return denied
		}
	}
	return false
}

// foldCase maps s to the form deny patterns and paths are compared in, so
// that matching ignores case the way case-insensitive file systems do:
// each rune is upper-cased and then lower-cased, which also folds the
// Kelvin sign to "k" and the long s to "s". Bytes that are not UTF-8 are
// kept as they are. A path that is lower-case ASCII already (most of a
// source tree) is returned without copying.
func foldCase(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return foldFrom(s, i)
		}
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func foldFrom(s string, i int) string {
	var b strings.Builder
	b.Grow(len(s) + 4)
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte(c)
		} else {
			b.WriteRune(unicode.ToLower(unicode.ToUpper(r)))
		}
		i += n
	}
	return b.String()
}
