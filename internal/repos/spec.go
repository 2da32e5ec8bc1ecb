package repos

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/askrepo/askrepo/internal/cite"
	"github.com/askrepo/askrepo/internal/config"
	"go.yaml.in/yaml/v3"
)

// Channel entries with a meaning of their own; anything else is a Slack
// channel ID.
const (
	// AnyChannel ("*") serves every channel the bot is in, and DMs.
	AnyChannel = "*"
	// DirectMessages ("dm") serves direct messages (channel IDs D…).
	DirectMessages = "dm"
)

// Spec is one repository as configured: where it comes from, which
// channels may read it, and how to reach it. Exactly one of Path and URL is
// set. Credentials are never part of a Spec: TokenEnv and SSHKeyEnv name
// environment variables, SSHKey names a file.
type Spec struct {
	// Name identifies the repository in questions ("in payments: …"),
	// footers and health; lowercase [a-z0-9._-], unique.
	Name string `yaml:"name"`
	// Path is a local checkout used in place and never synced.
	Path string `yaml:"path"`
	// URL is a git remote (https, http, ssh, file, or user@host:path) that
	// is cloned into the data directory and fetched periodically.
	URL string `yaml:"url"`
	// Branch to follow; empty follows the remote's default branch.
	Branch string `yaml:"branch"`
	// Channels that may read the repository: Slack channel IDs, "dm" for
	// direct messages, "*" for everywhere.
	Channels []string `yaml:"channels"`
	// DefaultFor lists channels (same syntax as Channels) where this repo
	// answers questions that name none. Elsewhere the first repo listing
	// the channel by ID wins, then the first one serving it through "*".
	DefaultFor []string `yaml:"default_for"`
	// Deny adds patterns to the workspace's default deny-list.
	Deny []string `yaml:"deny"`
	// WebURL and WebKind override the web view derived from the remote
	// (for permalinks); WebKind names the host software (github, gitlab,
	// bitbucket, gitea, forgejo, codeberg) when the host name does not
	// tell, as for git.acme.internal.
	WebURL  string `yaml:"web_url"`
	WebKind string `yaml:"web_kind"`
	// TokenEnv names the environment variable holding an HTTPS token; the
	// user name sent with it is the URL's user, or x-access-token. An
	// https URL with a user but no password needs it: the user alone is
	// never sent, and is taken for a pasted token.
	TokenEnv string `yaml:"token_env"`
	// SSHKey is the path of a private key for ssh URLs; SSHKeyEnv names an
	// environment variable holding that path. At most one is set.
	SSHKey    string `yaml:"ssh_key"`
	SSHKeyEnv string `yaml:"ssh_key_env"`
}

// WebKinds are the accepted values of Spec.WebKind (those cite knows).
var WebKinds = []string{"github", "gitlab", "bitbucket", "gitea", "forgejo", "codeberg"}

var (
	nameRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	channelRE = regexp.MustCompile(`^[A-Z0-9]{2,}$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// scpRE matches git's scp-like syntax, user@host:path. The user is
	// required so that a Windows path or a relative "dir:x" is not taken
	// for a remote.
	scpRE = regexp.MustCompile(`^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^:]`)
)

// specKeys are the keys a repos entry may have; anything else is a typo
// that would otherwise be silently ignored.
var specKeys = []string{"name", "path", "url", "branch", "channels", "default_for", "deny", "web_url", "web_kind", "token_env", "ssh_key", "ssh_key_env"}

// LoadFile reads the repos section of the YAML file at path (the same file
// BOT_CONFIG names; other sections are ignored) and validates it. A file
// without a repos section gives no specs and no error. The section looks
// like this:
//
//	repos:
//	  - name: payments
//	    url: https://github.com/acme/payments.git  # or path: /srv/checkouts/payments
//	    branch: main                               # default: the remote's default branch
//	    channels: [C0123PAY, C0456OPS]             # channel IDs, "dm", or "*" for everywhere
//	    default_for: [C0456OPS]                    # where it answers unnamed questions
//	    deny: ["*.tfvars"]                         # more files the model may not read
//	    web_url: https://github.com/acme/payments  # optional; derived from url otherwise
//	    web_kind: github                           # github|gitlab|bitbucket|gitea|forgejo|codeberg
//	    token_env: GITHUB_TOKEN                    # the variable's name, never the token
//	  - name: infra
//	    url: git@gitlab.example.com:ops/infra.git
//	    ssh_key: /run/secrets/deploy_key           # or ssh_key_env: DEPLOY_KEY_PATH
//	    channels: [C0456OPS, dm]
//
// Every problem is reported at once, each on its own line naming the file
// and, where it has one, the line in it. On error the specs are still
// returned as far as they decoded, so checks of the environment can be
// made for them too (Check); they must not be used otherwise.
func LoadFile(path string) ([]Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read repos from %s: %w", path, err)
	}
	specs, err := Parse(data)
	return specs, inFile(path, err)
}

// inFile prefixes each of the problems joined in err with path.
func inFile(path string, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var errs []error
		for _, e := range j.Unwrap() {
			errs = append(errs, inFile(path, e))
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Parse reads the repos section of a YAML document and validates it,
// reporting every problem at once, each with its line. On error the specs
// are returned as far as they decoded, as LoadFile says.
func Parse(data []byte) ([]Spec, error) {
	var doc struct {
		Repos yaml.Node `yaml:"repos"`
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	n := &doc.Repos
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: repos: want a list of repositories, each with a name", n.Line)
	}
	var specs []Spec
	var lines []int
	var errs []error
	for i, item := range n.Content {
		lines = append(lines, item.Line)
		if item.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("line %d: repos[%d]: want a mapping with name, and path or url", item.Line, i))
			continue
		}
		for k := 0; k+1 < len(item.Content); k += 2 {
			key := item.Content[k]
			if !slices.Contains(specKeys, key.Value) {
				errs = append(errs, fmt.Errorf("line %d: repos[%d]: unknown key %q (known: %s)", key.Line, i, key.Value, strings.Join(specKeys, ", ")))
			}
		}
		var s Spec
		if err := item.Decode(&s); err != nil {
			errs = append(errs, fmt.Errorf("line %d: repos[%d]: %w", item.Line, i, err))
		}
		// Kept even when broken, so Validate's repos[i] matches the file.
		specs = append(specs, s)
	}
	if err := validate(specs, lines); err != nil {
		errs = append(errs, err)
	}
	return specs, errors.Join(errs...)
}

// Single is the one-repository setup of REPO_PATH: a local checkout that
// serves every channel and DM. name is made a valid repo name (lowercased,
// other characters replaced by '-'); an empty result becomes "repo".
func Single(name, path string, deny []string) Spec {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	n := strings.TrimLeft(b.String(), "._-")
	if len(n) > 64 {
		n = n[:64]
	}
	if n == "" {
		n = "repo"
	}
	return Spec{Name: n, Path: path, Channels: []string{AnyChannel}, Deny: deny}
}

// FromConfig returns the repositories of a loaded configuration: the repos
// list of the BOT_CONFIG file when it has one, otherwise PathOnly.
//
// On error the specs are returned as far as they decoded, as LoadFile says.
func FromConfig(cfg config.Config) ([]Spec, error) {
	if cfg.ConfigFile != "" {
		specs, err := LoadFile(cfg.ConfigFile)
		if err != nil {
			return specs, err
		}
		if len(specs) > 0 {
			return specs, nil
		}
	}
	return PathOnly(cfg)
}

// PathOnly is the single checkout of REPO_PATH (with REPO_NAME and
// REPO_DENY) serving everywhere, whatever BOT_CONFIG lists: what a checkout
// named on the command line (bot ask --repo DIR) means, since a flag is the
// most specific thing the caller said.
func PathOnly(cfg config.Config) ([]Spec, error) {
	s := Single(cfg.ResolvedRepoName(), cfg.RepoPath, cfg.RepoDeny)
	if err := Validate([]Spec{s}); err != nil {
		return nil, err
	}
	return []Spec{s}, nil
}

// Validate checks specs on their own (no file system or network access)
// and reports every problem at once.
func Validate(specs []Spec) error { return validate(specs, nil) }

// validate is Validate naming lines[i], when known, as the line of specs[i].
func validate(specs []Spec, lines []int) error {
	var errs []error
	seen := map[string]bool{}
	defaults := map[string]string{} // channel entry -> repo that claims it
	for i, s := range specs {
		label := fmt.Sprintf("repos[%d]", i)
		if i < len(lines) {
			label = fmt.Sprintf("line %d: %s", lines[i], label)
		}
		if s.Name != "" {
			label += " (" + s.Name + ")"
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", label, fmt.Sprintf(format, args...)))
		}
		switch {
		case s.Name == "":
			bad("name is missing; give a short lowercase name people can type, such as payments")
		case !nameRE.MatchString(s.Name):
			bad("name %q: use up to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", s.Name)
		case seen[s.Name]:
			bad("name %q is used twice; names must be unique", s.Name)
		}
		seen[s.Name] = true

		switch {
		case s.Path == "" && s.URL == "":
			bad("set path (a local checkout) or url (a git remote to clone)")
		case s.Path != "" && s.URL != "":
			bad("set path or url, not both")
		case s.URL != "":
			if err := checkURL(s); err != nil {
				bad("%v", err)
			}
		}
		if s.Path != "" && (s.Branch != "" || s.TokenEnv != "" || s.SSHKey != "" || s.SSHKeyEnv != "") {
			bad("branch, token_env, ssh_key and ssh_key_env apply to url repos only; a path is used as it is")
		}
		if s.Branch != "" {
			if err := checkBranch(s.Branch); err != nil {
				bad("branch %q: %v", s.Branch, err)
			}
		}

		if len(s.Channels) == 0 {
			bad(`channels is empty; list channel IDs (C…), "dm" for direct messages, or "*" for everywhere`)
		}
		for _, c := range s.Channels {
			if err := checkChannel(c); err != nil {
				bad("channels: %v", err)
			}
		}
		for _, c := range s.DefaultFor {
			if err := checkChannel(c); err != nil {
				bad("default_for: %v", err)
				continue
			}
			if !serves(s.Channels, c) {
				bad("default_for: %q is not among the channels this repo serves", c)
			}
			if other, ok := defaults[c]; ok {
				bad("default_for: %q is already the default of %q; a channel has one default", c, other)
				continue
			}
			defaults[c] = s.Name
		}

		if s.WebKind != "" && !slices.Contains(WebKinds, s.WebKind) {
			bad("web_kind %q: want one of %s", s.WebKind, strings.Join(WebKinds, ", "))
		} else if s.WebURL != "" {
			if _, err := cite.ParseWeb(s.WebURL, cite.Kind(s.WebKind)); err != nil {
				bad("web_url: %s", redactURL(err.Error()))
			}
		}
		if s.TokenEnv != "" && (!envNameRE.MatchString(s.TokenEnv) || looksLikeToken(s.TokenEnv)) {
			bad("token_env %q: give the name of an environment variable (such as GITHUB_TOKEN), not the token itself", redactValue(s.TokenEnv))
		}
		if s.SSHKeyEnv != "" && !envNameRE.MatchString(s.SSHKeyEnv) {
			bad("ssh_key_env %q: give the name of an environment variable holding the key's path", redactValue(s.SSHKeyEnv))
		}
		if s.SSHKey != "" && s.SSHKeyEnv != "" {
			bad("set ssh_key or ssh_key_env, not both")
		}
		if s.SSHKey != "" && !filepath.IsAbs(s.SSHKey) {
			bad("ssh_key %q: give an absolute path", s.SSHKey)
		}
		if s.URL != "" {
			kind := urlKind(s.URL)
			if s.TokenEnv != "" && kind != "http" {
				bad("token_env applies to https URLs; for ssh use ssh_key")
			}
			if (s.SSHKey != "" || s.SSHKeyEnv != "") && kind != "ssh" {
				bad("ssh_key applies to ssh URLs (ssh://… or git@host:path)")
			}
		}
	}
	return errors.Join(errs...)
}

// serves reports whether a repo listing channels serves entry c (a channel
// ID, "dm" or "*").
func serves(channels []string, c string) bool {
	if slices.Contains(channels, AnyChannel) || slices.Contains(channels, c) {
		return true
	}
	return isDM(c) && slices.Contains(channels, DirectMessages)
}

func isDM(channel string) bool { return strings.HasPrefix(channel, "D") }

func checkChannel(c string) error {
	switch {
	case c == AnyChannel || c == DirectMessages:
		return nil
	case channelRE.MatchString(c):
		return nil
	default:
		return fmt.Errorf(`%q is not a channel ID; use the ID (C…, shown at the bottom of the channel's details), "dm" or "*"`, c)
	}
}

// checkBranch applies the rules of git check-ref-format --branch that
// matter here: nothing git could read as an option, a range, a reflog
// expression or a glob.
func checkBranch(b string) error {
	switch {
	case strings.HasPrefix(b, "-"):
		return errors.New("must not start with '-'")
	case strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") || strings.HasSuffix(b, "."):
		return errors.New("must not start or end with '/' or end with '.'")
	case strings.HasSuffix(b, ".lock"):
		return errors.New("must not end with .lock")
	case strings.Contains(b, "..") || strings.Contains(b, "@{") || strings.Contains(b, "//") || b == "@":
		return errors.New("must not contain '..', '@{' or '//'")
	case strings.HasPrefix(b, "refs/"):
		return errors.New("give the branch name without refs/heads/")
	}
	for _, part := range strings.Split(b, "/") {
		if strings.HasPrefix(part, ".") {
			return errors.New("no part may start with '.'")
		}
	}
	for _, r := range b {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return fmt.Errorf("must not contain %q", r)
		}
	}
	return nil
}

// urlKind tells how a remote is reached: "http" (http or https), "ssh",
// "file", or "" when git would not treat it as one of the allowed remotes.
func urlKind(raw string) string {
	if scpRE.MatchString(raw) && !strings.Contains(raw, "://") {
		return "ssh"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "https", "http":
		return "http"
	case "ssh", "git+ssh", "ssh+git":
		return "ssh"
	case "file":
		return "file"
	}
	return ""
}

func checkURL(s Spec) error {
	shown := redactURL(s.URL)
	if strings.HasPrefix(s.URL, "-") || strings.ContainsAny(s.URL, " \t\r\n") {
		return fmt.Errorf("url %q: must not start with '-' or contain spaces", shown)
	}
	switch urlKind(s.URL) {
	case "":
		return fmt.Errorf("url %q: want https://host/owner/repo.git, ssh://git@host/owner/repo.git, git@host:owner/repo.git or file:///path/to/repo.git", shown)
	case "http":
		u, _ := url.Parse(s.URL)
		if u.Host == "" {
			return fmt.Errorf("url %q: no host", shown)
		}
		if _, has := u.User.Password(); has && s.TokenEnv != "" {
			return fmt.Errorf("url %q carries a password and token_env is set too; keep only token_env", shown)
		}
		// https://TOKEN@host is a common paste, but git would send that
		// user with no password (the user is moved to the header, and only
		// a password or token_env makes one), so the clone fails with a
		// puzzling auth error. Say what to do instead.
		if u.User != nil && !hasPassword(u) && s.TokenEnv == "" {
			return fmt.Errorf("url %q has a user but no token: if it is a token, put it in an environment variable and name it in token_env (a user name in the URL is sent only together with token_env)", shown)
		}
		if u.Scheme == "http" && (s.TokenEnv != "" || hasPassword(u)) && !loopback(u.Hostname()) {
			return fmt.Errorf("url %q: a token would cross the network in clear text over http; use https", shown)
		}
	case "ssh":
		if u, err := url.Parse(s.URL); err == nil && u.Scheme != "" && hasPassword(u) {
			return fmt.Errorf("url %q: ssh URLs cannot carry a password; use ssh_key", shown)
		}
	case "file":
		u, _ := url.Parse(s.URL)
		if u.Host != "" && u.Host != "localhost" || !strings.HasPrefix(u.Path, "/") {
			return fmt.Errorf("url %q: want file:///absolute/path", shown)
		}
	}
	return nil
}

func hasPassword(u *url.URL) bool {
	_, ok := u.User.Password()
	return ok
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// looksLikeToken recognises the prefixes of GitHub's tokens, which are
// also valid variable names.
func looksLikeToken(v string) bool {
	for _, p := range []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"} {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	return false
}

// redactValue hides a value that may be a secret pasted in the wrong
// place (a token in token_env), keeping a hint of its shape.
func redactValue(v string) string {
	if len(v) > 6 {
		return v[:3] + "…[redacted]"
	}
	return v
}
