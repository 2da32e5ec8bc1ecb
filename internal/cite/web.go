package cite

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Kind is the software behind a repository's web view. It decides the shape
// of permalinks, which differs between hosts.
type Kind string

// The kinds of web view Permalink knows. Forgejo and Codeberg share Gitea's
// URL scheme and are KindGitea.
const (
	KindUnknown   Kind = ""
	KindGitHub    Kind = "github"
	KindGitLab    Kind = "gitlab"
	KindBitbucket Kind = "bitbucket"
	KindGitea     Kind = "gitea"
)

// Web is a repository's web view: the URL of its home page and the kind of
// host serving it, for example {"https://github.com/acme/payments", "github"}.
type Web struct {
	Base string
	Kind Kind
	// Prefix is where the checkout sits in the repository the web view
	// shows ("" at its top, "sub/dir/" below it): cited paths are the
	// checkout's, links need the repository's.
	Prefix string
}

// kindNames maps what a config may say to a Kind.
var kindNames = map[string]Kind{
	"github":    KindGitHub,
	"gitlab":    KindGitLab,
	"bitbucket": KindBitbucket,
	"gitea":     KindGitea,
	"forgejo":   KindGitea,
	"codeberg":  KindGitea,
}

func parseKind(s string) (Kind, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return KindUnknown, nil
	}
	k, ok := kindNames[s]
	if !ok {
		return "", fmt.Errorf("unknown web view kind %q: use github, gitlab, bitbucket, gitea (also for forgejo and codeberg), or leave it empty to detect it from the host", s)
	}
	return k, nil
}

// KindOfHost guesses the kind of web view from a host name. Self-hosted
// instances are recognised by the product name in the host
// (gitlab.example.com, gitea.example.com, github.example.com); any other host
// is KindUnknown and needs an explicit kind.
func KindOfHost(host string) Kind {
	h := strings.ToLower(host)
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	switch h {
	case "github.com", "www.github.com":
		return KindGitHub
	case "gitlab.com", "www.gitlab.com":
		return KindGitLab
	case "bitbucket.org", "www.bitbucket.org":
		return KindBitbucket
	case "codeberg.org":
		return KindGitea
	}
	switch {
	case strings.Contains(h, "gitlab"):
		return KindGitLab
	case strings.Contains(h, "gitea"), strings.Contains(h, "forgejo"):
		return KindGitea
	case strings.Contains(h, "github"):
		return KindGitHub
	}
	return KindUnknown
}

// scpLikeRE matches git's scp-like remote syntax, [user@]host:path.
var scpLikeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[^@/:\s]+@)?([A-Za-z0-9.-]+):([^\s]+)$`) })

// WebFromRemote derives the web view from a git remote URL: https and http
// URLs keep their scheme and port, ssh, git and scp-like remotes become https
// on the same host without the ssh port. Credentials in the remote are
// dropped, never copied into links. It reports false for local paths, remotes
// that do not name an owner and a repository, and hosts whose kind it cannot
// tell; for those use WebFromRemoteAs with the kind, or ParseWeb.
func WebFromRemote(remote string) (Web, bool) {
	w, err := WebFromRemoteAs(remote, KindUnknown)
	return w, err == nil
}

// WebFromRemoteAs is WebFromRemote with the kind given, for self-hosted
// instances whose host name does not tell (git.acme.internal running Gitea).
// An empty kind is detected from the host.
func WebFromRemoteAs(remote string, kind Kind) (Web, error) {
	k, err := parseKind(string(kind))
	if err != nil {
		return Web{}, err
	}
	scheme, host, repoPath, err := splitRemote(remote)
	if err != nil {
		return Web{}, err
	}
	if k == KindUnknown {
		k = KindOfHost(host)
	}
	if k == KindUnknown {
		return Web{}, fmt.Errorf("cannot tell the web view of host %q: give its kind (github, gitlab, bitbucket or gitea) or its base URL", host)
	}
	u := url.URL{Scheme: scheme, Host: host, Path: "/" + repoPath}
	return Web{Base: u.String(), Kind: k}, nil
}

func splitRemote(remote string) (scheme, host, repoPath string, err error) {
	remote = strings.TrimSpace(remote)
	var p string
	if strings.Contains(remote, "://") {
		u, perr := url.Parse(remote)
		if perr != nil {
			return "", "", "", errors.New("the remote is not a valid URL")
		}
		switch strings.ToLower(u.Scheme) {
		case "https", "http":
			scheme, host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		case "ssh", "git", "git+ssh", "ssh+git":
			scheme, host = "https", strings.ToLower(u.Hostname())
			if strings.Contains(host, ":") {
				host = "[" + host + "]"
			}
		default:
			return "", "", "", fmt.Errorf("remote scheme %q has no web view", u.Scheme)
		}
		p = u.Path
	} else {
		m := scpLikeRE().FindStringSubmatch(remote)
		if m == nil || len(m[1]) < 2 {
			return "", "", "", errors.New("the remote is neither a URL nor host:path")
		}
		scheme, host, p = "https", strings.ToLower(m[1]), m[2]
	}
	if host == "" {
		return "", "", "", errors.New("the remote names no host")
	}
	p = strings.Trim(p, "/")
	p = strings.TrimSuffix(p, ".git")
	p = strings.Trim(p, "/")
	segs := strings.Split(p, "/")
	if len(segs) < 2 {
		return "", "", "", errors.New("the remote path names no owner and repository")
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return "", "", "", errors.New("the remote path is not owner/repository")
		}
	}
	return scheme, host, p, nil
}

// ParseWeb checks an explicit web view from configuration: an http(s) URL of
// the repository's home page, without credentials, query or fragment. An
// empty kind is detected from the host; the error says when it cannot be.
func ParseWeb(base string, kind Kind) (Web, error) {
	k, err := parseKind(string(kind))
	if err != nil {
		return Web{}, err
	}
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil {
		// url.Parse's error quotes the whole value, credentials included.
		return Web{}, errors.New("web view URL does not parse as a URL: give the repository's home page, as in https://github.com/acme/payments")
	}
	// Errors quote the URL without what can carry a token.
	shown := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	if u.Scheme != "https" && u.Scheme != "http" {
		return Web{}, fmt.Errorf("web view URL %q must start with https://", shown.String())
	}
	if u.Host == "" {
		return Web{}, fmt.Errorf("web view URL %q names no host", shown.String())
	}
	if u.User != nil {
		return Web{}, errors.New("web view URL carries credentials: remove them, links are shown to everyone in the channel")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return Web{}, fmt.Errorf("web view URL %q must not have a query or fragment: give the repository's home page", shown.String()+"?…")
	}
	p := strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	if strings.Count(p, "/") < 1 {
		return Web{}, fmt.Errorf("web view URL %q must name the owner and the repository, as in https://github.com/acme/payments", shown.String())
	}
	if k == KindUnknown {
		k = KindOfHost(u.Host)
	}
	if k == KindUnknown {
		return Web{}, fmt.Errorf("cannot tell the kind of web view at %q: set it to github, gitlab, bitbucket or gitea", u.Host)
	}
	w := url.URL{Scheme: u.Scheme, Host: strings.ToLower(u.Host), Path: "/" + p}
	return Web{Base: w.String(), Kind: k}, nil
}

// Permalink is the URL of path at commit with lines start-end highlighted.
// start 0 links the whole file; end below start is taken as start. It is ""
// when w is not a known kind or commit is empty, so a caller can test for "".
// Path segments are escaped (spaces, #, ?, parentheses, non-ASCII); slashes
// are kept.
func (w Web) Permalink(commit, path string, start, end int) string {
	f, ok := linkForms[w.Kind]
	if w.Base == "" || commit == "" || !ok {
		return ""
	}
	base := strings.TrimRight(w.Base, "/")
	c, p := url.PathEscape(commit), escapePath(w.Prefix+path)
	if end < start {
		end = start
	}
	return base + f.blob + c + "/" + p + lineAnchor(f.line, f.rangeSep, start, end)
}

// TreeLink is the URL of directory path at commit, "" under the same
// conditions as Permalink.
func (w Web) TreeLink(commit, path string) string {
	f, ok := linkForms[w.Kind]
	if w.Base == "" || commit == "" || !ok {
		return ""
	}
	base := strings.TrimRight(w.Base, "/")
	c, p := url.PathEscape(commit), escapePath(strings.TrimSuffix(w.Prefix+path, "/"))
	return base + f.tree + c + "/" + p + f.treeEnd
}

// linkForm is how one kind of web view spells its links: a file at a
// commit is base+blob+commit+"/"+path, its lines follow as an anchor (line,
// then rangeSep and the last line of a range), and a directory is
// base+tree+commit+"/"+path+treeEnd.
type linkForm struct {
	blob, tree, treeEnd string
	line, rangeSep      string
}

var linkForms = map[Kind]linkForm{
	KindGitHub:    {blob: "/blob/", tree: "/tree/", line: "#L", rangeSep: "-L"},
	KindGitLab:    {blob: "/-/blob/", tree: "/-/tree/", line: "#L", rangeSep: "-"},
	KindBitbucket: {blob: "/src/", tree: "/src/", treeEnd: "/", line: "#lines-", rangeSep: ":"},
	KindGitea:     {blob: "/src/commit/", tree: "/src/commit/", line: "#L", rangeSep: "-L"},
}

func lineAnchor(open, sep string, start, end int) string {
	if start <= 0 {
		return ""
	}
	if end <= start {
		return open + strconv.Itoa(start)
	}
	return open + strconv.Itoa(start) + sep + strconv.Itoa(end)
}

// escapePath escapes each segment of a slash-separated path. PathEscape
// leaves "(" and ")" escaped too, which keeps a link's destination from
// ending early in Markdown.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
