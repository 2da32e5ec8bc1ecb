package repos

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

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

// maxName is the longest repository name.
const maxName = 64

// WebKinds are the accepted values of Spec.WebKind (those cite knows).
var WebKinds = []string{"github", "gitlab", "bitbucket", "gitea", "forgejo", "codeberg"}

var (
	// nameRE leaves the length (at most maxName) to len: a counted
	// repetition compiles to a program as long as its count, which every
	// start would pay for.
	nameRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
	channelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z0-9]{2,}$`) })
	envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	// scpRE matches git's scp-like syntax, user@host:path. The user is
	// required so that a Windows path or a relative "dir:x" is not taken
	// for a remote.
	scpRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^:]`) })
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
