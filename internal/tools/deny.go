package tools

import (
	"fmt"
	"strings"

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
}

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
// base its last element); the last matching pattern decides.
func (d denyList) match(full, base string) bool {
	deny := false
	for _, p := range d {
		var ok bool
		if p.anchored {
			ok = doublestar.MatchUnvalidated(p.glob, full)
		} else {
			ok = doublestar.MatchUnvalidated(p.glob, base)
		}
		if ok {
			deny = !p.negate
		}
	}
	return deny
}
