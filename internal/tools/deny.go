package tools

import (
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultDeny lists files inside a checkout that may hold secrets. The wall
// of the Workspace keeps the model out of other directories, but a checkout
// can itself contain an .env someone forgot to ignore, a deploy key, or the
// credentials git keeps in .git/config; none of those should ever reach a
// model or a Slack thread.
//
// Patterns follow .gitignore: a pattern without a slash matches a name at any
// depth, a trailing slash names a directory (everything beneath it is denied),
// a pattern with a slash inside is matched against the whole path from the
// root, "**" crosses directories, and "!" re-allows what an earlier pattern
// denied (the last matching pattern wins).
var DefaultDeny = []string{
	".env",
	".env.*",
	"!.env.example",
	"*.pem",
	"*.key",
	"*.p12",
	"*.pfx",
	"id_rsa*",
	"id_dsa*",
	"id_ecdsa*",
	"id_ed25519*",
	".git/",
	".netrc",
	".npmrc",
	".pypirc",
	".pgpass",
	".git-credentials",
	"credentials*.json",
}

// denyPattern is one parsed deny-list line.
type denyPattern struct {
	glob     string // without "!" and trailing "/"
	negate   bool
	anchored bool // contains a slash: matched against the whole path

	// Every path of a listing is matched against every pattern, once per
	// path element, and a general glob match costs about 100ns: half the
	// cost of listing a large checkout. Nearly all deny patterns are a
	// name, "prefix*", "*suffix" or "prefix*suffix", which are compared as
	// strings instead; the rest go to doublestar.
	kind           denyKind
	prefix, suffix string // the text around the one "*" (all of it for denyExact)
}

type denyKind uint8

const (
	denyGlob  denyKind = iota // anything else: doublestar decides
	denyExact                 // no wildcard: the whole string
	denyAffix                 // prefix*suffix, either part possibly empty
)

// denyList answers whether a path is refused. It is immutable once built, so
// it is safe for concurrent use.
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
		p.glob = line
		p.kind, p.prefix, p.suffix = classifyGlob(line)
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
		p := &d[i]
		s := base
		if p.anchored {
			s = full
		}
		if p.matches(s) {
			return !p.negate
		}
	}
	return false
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
	}
	return doublestar.MatchUnvalidated(p.glob, s)
}

// classifyGlob finds the string comparison a glob amounts to, if any: no
// special character at all (an exact name), or a single "*" with plain text
// around it. Any other syntax (?, [...], {...}, \, "**") stays a glob, and
// so does text that is not valid UTF-8 or holds U+FFFD: doublestar compares
// runes, and every invalid byte decodes to U+FFFD.
func classifyGlob(glob string) (kind denyKind, prefix, suffix string) {
	if strings.ContainsAny(glob, "?[]{}\\\uFFFD") || !utf8.ValidString(glob) {
		return denyGlob, "", ""
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
			x.fullFirst[p.prefix[0]] |= bit
		case p.kind != denyGlob && p.prefix != "":
			x.baseFirst[p.prefix[0]] |= bit
		case p.kind == denyAffix && p.suffix != "":
			// The last byte of a whole path is its last element's.
			x.last[p.suffix[len(p.suffix)-1]] |= bit
		default:
			x.always |= bit
		}
	}
	return x
}

// denied is denyList.denied.
func (x *denyIndex) denied(rel string) bool {
	if x.all {
		return x.list.denied(rel)
	}
	if len(x.list) == 0 || rel == "." || rel == "" {
		return false
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
			if mask != 0 && x.match(mask, rel[:end], rel[i:end]) {
				return true
			}
		} else if x.list.match(rel[:end], "") {
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
		p := &x.list[i]
		s := base
		if p.anchored {
			s = full
		}
		if p.matches(s) {
			return !p.negate
		}
	}
	return false
}
