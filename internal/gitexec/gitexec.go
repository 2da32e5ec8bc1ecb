// Package gitexec builds every git command askrepo runs, so that no
// repository can make git run a program, and nothing in the service's own
// environment can point git somewhere else.
//
// A repository is someone else's directory: its .git/config (and any file
// that config includes) may name an fsmonitor, hooks, a pager, an external
// diff, a credential helper or askpass program, an ssh command or a proxy.
// git always reads that config, so each such key is set again at the
// command line's level (GIT_CONFIG_COUNT), which repository config cannot
// override; system and global config are not read at all. The rest of the
// environment is the service's, minus every GIT_ variable (a GIT_DIR,
// GIT_EXTERNAL_DIFF or GIT_CONFIG_PARAMETERS of its own would redirect or
// reconfigure git), pagers, editors, askpass programs and locale.
//
// Attribute-driven drivers (filter.<name>.clean/smudge/process,
// diff.<name>.textconv and .command, merge.<name>.driver) have no wildcard
// to reset. Read paths therefore use commands that never run them
// (ls-files, rev-parse, cat-file --batch without --filters, log/show/blame
// with --no-textconv and --no-ext-diff, and history rather than the
// working tree), and WithoutDrivers switches off, by name, the ones a
// repository defines when it is opened. Commands that write a working
// tree (worktree add) run filters and are only used on clones whose
// config askrepo wrote itself.
//
// It imports no other internal package, so that every package that runs
// git, the bottom ones included, can use it.
package gitexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Git describes how to run git for one repository. The zero value runs
// "git" in the current directory with no network. It is a value; copy
// and adjust it freely. Settings in Config and Env are the operator's and
// trusted; nothing the repository says can change them.
type Git struct {
	// Binary is the git executable, looked up in PATH when it has no
	// slash. Empty means "git".
	Binary string
	// Dir is the working directory; empty means the current one.
	Dir string
	// GitDir and WorkTree, when set, are given as --git-dir and
	// --work-tree, so git never discovers the repository by itself (a
	// .git file, core.worktree) after the caller has checked it once.
	GitDir   string
	WorkTree string
	// Config is git configuration of the operator's: credentials for a
	// remote, safe.directory. It reaches git through the environment, never
	// argv, where any local user could read it.
	Config [][2]string
	// Env holds extra KEY=VALUE entries of the operator's, such as
	// GIT_SSH_COMMAND with the deploy key. They cannot override the
	// hardening.
	Env []string
	// AllocLimit, when positive, is the largest single allocation git
	// may make (GIT_ALLOC_LIMIT); past it git stops with "attempting to
	// allocate ... over limit". A blob of repeated bytes compresses a
	// thousandfold, so a repository of a few hundred KB can hold one
	// that show, blame or log -S would inflate whole into memory. Set it
	// for reading history; clones and fetches, which must take any blob
	// a remote has, leave it zero.
	AllocLimit int64
	// Network allows the transports a remote may use (https, http, ssh,
	// file); without it every transport is refused, so a partial clone
	// cannot fetch missing objects on demand.
	Network bool
}

// hardening is set for every call, after the operator's Config, at the
// command line's level, where it wins over the repository's config and
// whatever that config includes.
var hardening = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", os.DevNull},
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"core.askPass", ""},
	// An empty helper clears the list built so far; a helper scoped to
	// a URL in the repository's config would survive this, which is one
	// reason transports are off unless the caller asks (and then the
	// config is a clone askrepo made).
	{"credential.helper", ""},
	// GIT_SSH_COMMAND of the operator (Env) wins over this.
	{"core.sshCommand", "false"},
	{"diff.external", ""},
	// Verifying signatures runs gpg.program (or ssh/x509 programs).
	{"log.showSignature", "false"},
	{"gpg.program", "false"},
	{"gpg.ssh.program", "false"},
	{"gpg.x509.program", "false"},
	// Files git would read from anywhere on the host on the repository's
	// say-so.
	{"mailmap.file", ""},
	{"mailmap.blob", ""},
	{"color.ui", "false"},
	{"core.quotePath", "false"},
	{"gc.autoDetach", "false"},
	// A submodule's change as its two commit ids only: "log" or "diff"
	// would read the submodule's repository, which its .git file can
	// place anywhere on the host, and print its commits or files.
	{"diff.submodule", "short"},
	// Read after GIT_NO_REPLACE_OBJECTS, so the repository could turn
	// replacement back on.
	{"core.useReplaceRefs", "false"},
}

// network is what Network allows; ext:: (which runs a command) and git://
// (through core.gitProxy) stay off.
var network = [][2]string{
	{"protocol.allow", "never"},
	{"protocol.https.allow", "always"},
	{"protocol.http.allow", "always"},
	{"protocol.ssh.allow", "always"},
	{"protocol.file.allow", "always"},
}

var offline = [][2]string{{"protocol.allow", "never"}}

// keptGitEnv are the GIT_ variables of the service's environment git may
// still see: where git's own programs live and which CAs to trust.
var keptGitEnv = []string{"GIT_EXEC_PATH", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH"}

// dropped reports whether the service's variable name must not reach git.
func dropped(name string) bool {
	switch {
	case strings.HasPrefix(name, "GIT_"):
		return !slices.Contains(keptGitEnv, name)
	case strings.HasPrefix(name, "LC_"), strings.HasPrefix(name, "SSH_ASKPASS"):
		return true
	}
	switch name {
	case "LANG", "LANGUAGE", "PAGER", "LESS", "LV", "EDITOR", "VISUAL", "DISPLAY":
		return true
	}
	return false
}

// Environ is the environment of a call configured by g: the service's,
// scrubbed, then g.Env, then the hardening, which comes last so that
// nothing before it can override it.
func (g Git) Environ() []string {
	env := make([]string, 0, 64)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !dropped(name) {
			env = append(env, kv)
		}
	}
	for _, kv := range g.Env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_CONFIG") {
			continue // config goes through Config
		}
		env = append(env, kv)
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		// Empty: no askpass program at all (an empty GIT_ASKPASS is
		// taken before core.askPass and SSH_ASKPASS, then skipped).
		"GIT_ASKPASS=",
		// Empty: no proxy command; core.gitProxy is first-match-wins,
		// so config cannot reset it, but this variable is read first.
		"GIT_PROXY_COMMAND=",
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_EDITOR=false",
		"LC_ALL=C",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_LAZY_FETCH=1",
		// Objects as they are stored: a refs/replace/ ref (or a grafts
		// file) makes git read one object's content for another's id,
		// so a public path whose blob id is checked would print a
		// replacement chosen by whoever wrote the repository, a
		// secret's content included, and a commit's history would not
		// be the one walked for secrets.
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_GRAFT_FILE="+os.DevNull,
	)
	if g.AllocLimit > 0 {
		env = append(env, "GIT_ALLOC_LIMIT="+strconv.FormatInt(g.AllocLimit, 10))
	}
	cfg := make([][2]string, 0, len(g.Config)+len(hardening)+len(network))
	cfg = append(cfg, g.Config...)
	cfg = append(cfg, hardening...)
	if g.Network {
		cfg = append(cfg, network...)
	} else {
		cfg = append(cfg, offline...)
	}
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(cfg)))
}

// argv is git's argument list: no pager, the repository given explicitly
// when g knows it, then args.
func (g Git) argv(args ...string) []string {
	argv := make([]string, 0, 3+len(args))
	argv = append(argv, "--no-pager")
	if g.GitDir != "" {
		argv = append(argv, "--git-dir="+g.GitDir)
	}
	if g.WorkTree != "" {
		argv = append(argv, "--work-tree="+g.WorkTree)
	}
	return append(argv, args...)
}

// Command returns git with args, ready to run under ctx. The caller sets
// Stdin, Stdout and Stderr. git's helpers (git-remote-https, ssh) may keep
// pipes open after git is killed, so Wait gives up on them after a while.
func (g Git) Command(ctx context.Context, args ...string) *exec.Cmd {
	bin := g.Binary
	if bin == "" {
		bin = "git"
	}
	cmd := exec.CommandContext(ctx, bin, g.argv(args...)...)
	cmd.Dir = g.Dir
	cmd.Env = g.Environ()
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// driverKeys matches the settings through which a repository's
// .gitattributes makes git run a program: filter drivers, diff drivers
// (textconv, an external diff command) and merge drivers.
const driverKeys = `^(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)$`

// WithoutDrivers returns g with every filter, diff and merge driver the
// repository's config defines (as g reads it now) set to empty, which
// switches a filter off and makes a driver fail instead of running. git
// has no wildcard for them, so their names are read from the config once;
// call it when the repository is opened. It is a second line: read paths
// use commands that run no driver in the first place.
func (g Git) WithoutDrivers(ctx context.Context) (Git, error) {
	g, _, err := g.WithoutDriversReading(ctx)
	return g, err
}

// WithoutDriversReading is WithoutDrivers that also returns the values of
// keys (canonical names: "remote.origin.url"), read by the same git call,
// so that opening a repository costs one process, not one per setting. A
// key set more than once has its last value, as git config --get gives
// it; a key not set is not in the map.
func (g Git) WithoutDriversReading(ctx context.Context, keys ...string) (Git, map[string]string, error) {
	pattern := driverKeys
	for _, k := range keys {
		pattern += "|^" + regexp.QuoteMeta(k) + "$"
	}
	out, err := g.Command(ctx, "config", "--null", "--get-regexp", pattern).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return g, nil, nil // none set
	}
	if err != nil {
		return g, nil, fmt.Errorf("read the repository's drivers: %w", err)
	}
	cfg := slices.Clone(g.Config)
	var values map[string]string
	// With --null each entry is the key, a newline and the value (none
	// for a key with no "="), then NUL; a key holds no newline, a value
	// may.
	for entry := range strings.SplitSeq(string(out), "\x00") {
		key, value, _ := strings.Cut(entry, "\n")
		if key = strings.TrimSpace(key); key == "" {
			continue
		}
		if slices.Contains(keys, key) {
			if values == nil {
				values = map[string]string{}
			}
			values[key] = value
			continue
		}
		cfg = append(cfg, [2]string{key, ""})
	}
	g.Config = cfg
	return g, values, nil
}
