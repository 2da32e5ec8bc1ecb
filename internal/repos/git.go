package repos

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec"
)

// auth is how one remote is reached. Its secrets live only in the
// environment of the git processes that talk to the remote (never in argv,
// which any local user can read in the process list, and never in a config
// file the model could be shown), and every text leaving this package is
// scrubbed of them.
type auth struct {
	config  [][2]string // git config for network calls (the auth header)
	env     []string    // KEY=VALUE entries for network calls (GIT_SSH_COMMAND)
	secrets []string    // exact strings to scrub from output
}

// cleanRemote splits a configured URL into the remote stored in the clone
// (no password, and for http no user either: it goes into the header) and
// the user and password it carried.
func cleanRemote(raw string) (remote, user, password string) {
	if urlKind(raw) != "http" {
		if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.User != nil {
			if _, ok := u.User.Password(); ok {
				u.User = url.User(u.User.Username())
				return u.String(), "", ""
			}
		}
		return raw, "", ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw, "", ""
	}
	user = u.User.Username()
	password, _ = u.User.Password()
	u.User = nil
	return u.String(), user, password
}

// redactURL is raw fit for a message: a password in it is replaced, up to
// the last '@' of the authority (a password may hold an unescaped '@', and
// URL parsers split user info at the last one), and so is a lone user of an
// http(s) URL, which is where a pasted token sits in https://TOKEN@host.
func redactURL(raw string) string {
	raw = userinfoRE().ReplaceAllString(raw, "${1}:[redacted]@")
	return httpUserRE().ReplaceAllString(raw, "${1}[redacted]@")
}

var (
	userinfoRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(://[^/\s:]*?):[^/\s]*@`) })
	httpUserRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(\bhttps?://)[^/\s:]+@`) })
)

// hostKeys is where ssh keeps and checks the host keys of ssh remotes.
// Pinned is the operator's own known_hosts file (BOT_SSH_KNOWN_HOSTS):
// ssh accepts only the keys it lists. Otherwise the first key a host shows
// is trusted and saved in File, under the data directory, so it survives
// restarts and a changed key is refused from then on; it never depends on
// a home directory the service's user may not have.
type hostKeys struct {
	File   string
	Pinned bool
}

// sshOptions are the ssh options that make a host's key checked against
// k, quoted for GIT_SSH_COMMAND.
func (k hostKeys) sshOptions() string {
	if k.File == "" {
		return " -o StrictHostKeyChecking=accept-new"
	}
	check := "accept-new"
	if k.Pinned {
		check = "yes"
	}
	return " -o StrictHostKeyChecking=" + check + " -o UserKnownHostsFile=" + shellQuote(k.File)
}

// check reports a pinned known_hosts file that cannot be read: every ssh
// clone would fail with a host key error that does not say why.
func (k hostKeys) check() error {
	if !k.Pinned {
		return nil
	}
	if fi, err := os.Stat(k.File); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("BOT_SSH_KNOWN_HOSTS %s: not a readable file; mount the known_hosts file with the git hosts' keys there (ssh-keyscan HOST >> known_hosts, then check the fingerprints)", k.File)
	}
	return nil
}

// newAuth gathers the credentials of a url spec from the environment. A
// named variable that is unset, or a key file that is missing, is an error
// at start: the deployment is wrong, and waiting will not fix it.
func newAuth(s Spec, env func(string) (string, bool), keys hostKeys) (auth, error) {
	var a auth
	remote, user, password := cleanRemote(s.URL)
	switch urlKind(s.URL) {
	case "http":
		token := password
		if s.TokenEnv != "" {
			v, ok := env(s.TokenEnv)
			if !ok || strings.TrimSpace(v) == "" {
				return a, fmt.Errorf("token_env: the environment variable %s is not set; set it to a token with read access to the repository", s.TokenEnv)
			}
			token = strings.TrimSpace(v)
		}
		if token == "" {
			return a, nil
		}
		if user == "" {
			// GitHub's documented user for installation and fine-grained
			// tokens; GitLab and Gitea accept any user with a token.
			user = "x-access-token"
		}
		cred := base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
		u, _ := url.Parse(remote)
		// Scoped to the remote's origin, so a redirect to another host
		// does not carry the header along.
		key := "http." + u.Scheme + "://" + u.Host + "/.extraHeader"
		a.config = [][2]string{{key, "Authorization: Basic " + cred}}
		a.secrets = []string{token, cred}
		if password != "" {
			a.secrets = append(a.secrets, url.QueryEscape(password), url.PathEscape(password))
		}
	case "ssh":
		key := s.SSHKey
		if s.SSHKeyEnv != "" {
			v, ok := env(s.SSHKeyEnv)
			if !ok || strings.TrimSpace(v) == "" {
				return a, fmt.Errorf("ssh_key_env: the environment variable %s is not set; set it to the path of the deploy key", s.SSHKeyEnv)
			}
			key = strings.TrimSpace(v)
		}
		if err := keys.check(); err != nil {
			return a, err
		}
		cmd := "ssh -o BatchMode=yes" + keys.sshOptions()
		if key != "" {
			if fi, err := os.Stat(key); err != nil || !fi.Mode().IsRegular() {
				return a, fmt.Errorf("ssh key %s: not a readable file; mount the deploy key there", key)
			}
			cmd += " -i " + shellQuote(key) + " -o IdentitiesOnly=yes"
		}
		a.env = []string{"GIT_SSH_COMMAND=" + cmd}
	}
	return a, nil
}

// scrub removes a's secrets and any password in a URL from s.
func (a auth) scrub(s string) string {
	for _, sec := range a.secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return redactURL(s)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// gitCall is one git invocation, built by gitexec: no config but the
// repository's and the operator's, every key that could run a program set
// on the command line's level, and the service's GIT_ variables dropped.
// The operator's credentials (auth) travel in its environment.
type gitCall struct {
	dir string      // working directory; "" = the current one
	git gitexec.Git // a checkout's own runner (Workspace.Git); zero = plain
	// auth holds credentials for calls that reach the remote; only those
	// may use a transport at all.
	auth    *auth
	timeout time.Duration
}

// maxGitOutput caps what is kept of git's stdout and stderr; the calls
// here print a SHA or a few lines of progress.
const maxGitOutput = 64 << 10

// run runs git with args and returns its trimmed stdout. The error names
// the subcommand and carries the end of stderr, scrubbed of credentials;
// a timeout says so.
func (c gitCall) run(ctx context.Context, args ...string) (string, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	a := auth{}
	if c.auth != nil {
		a = *c.auth
	}
	g := c.git
	if c.dir != "" {
		g.Dir = c.dir
	}
	g.Config = slices.Concat(g.Config, a.config)
	g.Env = slices.Concat(g.Env, a.env)
	g.Network = c.auth != nil
	cmd := g.Command(ctx, args...)
	var stdout, stderr capped
	stdout.max, stderr.max = maxGitOutput, maxGitOutput
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil {
		return strings.TrimSpace(stdout.String()), nil
	}
	sub := args[0]
	for i := 0; i+1 < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		sub = args[i+1]
	}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && c.timeout > 0 {
			return "", fmt.Errorf("git %s: no answer within %s: %w", sub, c.timeout, ctx.Err())
		}
		return "", fmt.Errorf("git %s: %w", sub, ctx.Err())
	}
	msg := a.scrub(lastLines(stderr.String(), 4))
	if msg == "" {
		msg = err.Error()
	}
	ge := &gitError{msg: fmt.Sprintf("git %s: %s", sub, msg), code: -1}
	if xe, ok := errors.AsType[*exec.ExitError](err); ok {
		ge.code = xe.ExitCode()
	}
	return "", ge
}

// gitError is a git command that ran and failed: its message, and its
// exit status (-1 when it did not exit by itself).
type gitError struct {
	msg  string
	code int
}

func (e *gitError) Error() string { return e.msg }

// lastLines keeps the last n non-empty lines of s, joined by "; ": git's
// verdict ("fatal: …") comes last, after progress.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "; ")
	if len(out) > 1000 {
		out = out[:1000] + "…"
	}
	return out
}

// capped is a buffer that keeps the first max bytes and drops the rest.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		if len(p) > room {
			c.Buffer.Write(p[:room])
		} else {
			c.Buffer.Write(p)
		}
	}
	return len(p), nil
}
