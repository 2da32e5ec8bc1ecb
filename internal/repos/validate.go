package repos

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/askrepo/askrepo/internal/cite"
)

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
		case len(s.Name) > maxName || !nameRE().MatchString(s.Name):
			bad("name %q: use up to 64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", s.Name)
		case seen[s.Name]:
			bad("name %q is used twice; names must be unique", s.Name)
		}
		seen[s.Name] = true

		checkSource(s, bad)
		checkChannels(s, defaults, bad)
		checkWebAndCredentials(s, bad)
	}
	return errors.Join(errs...)
}

// checkSource checks where a repo comes from: a path or a url, and what
// applies to a url only (branch, credentials).
func checkSource(s Spec, bad func(format string, args ...any)) {
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
}

// checkChannels checks the channels a repo serves and those it is the
// default of; defaults maps each channel entry to the repo that claimed
// it first.
func checkChannels(s Spec, defaults map[string]string, bad func(format string, args ...any)) {
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
}

// checkWebAndCredentials checks the web view for permalinks and how the
// remote is reached: the names of the variables holding secrets (never
// the secrets), and that each credential suits the URL's scheme.
func checkWebAndCredentials(s Spec, bad func(format string, args ...any)) {
	if s.WebKind != "" && !slices.Contains(WebKinds, s.WebKind) {
		bad("web_kind %q: want one of %s", s.WebKind, strings.Join(WebKinds, ", "))
	} else if s.WebURL != "" {
		if _, err := cite.ParseWeb(s.WebURL, cite.Kind(s.WebKind)); err != nil {
			bad("web_url: %s", redactURL(err.Error()))
		}
	}
	if s.TokenEnv != "" && (!envNameRE().MatchString(s.TokenEnv) || looksLikeToken(s.TokenEnv)) {
		bad("token_env %q: give the name of an environment variable (such as GITHUB_TOKEN), not the token itself", redactValue(s.TokenEnv))
	}
	if s.SSHKeyEnv != "" && !envNameRE().MatchString(s.SSHKeyEnv) {
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
	case channelRE().MatchString(c):
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
	if scpRE().MatchString(raw) && !strings.Contains(raw, "://") {
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
