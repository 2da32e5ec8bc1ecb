package repos

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/logging/logtest"
)

// wrapGit puts a git on PATH that appends its argv to argv.log and its
// GIT_CONFIG_* environment to env.log, then runs the real git: the test
// sees exactly what the process list would show, and what went by the
// environment instead.
func wrapGit(t *testing.T) (argvLog, envLog string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	argvLog, envLog = filepath.Join(dir, "argv.log"), filepath.Join(dir, "env.log")
	script := "#!/bin/sh\n" +
		"printf '%s\\n' \"$*\" >> '" + argvLog + "'\n" +
		"env | grep '^GIT_CONFIG_\\|^GIT_SSH_COMMAND=' >> '" + envLog + "'\n" +
		"exec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return argvLog, envLog
}

// TestCredentialsNeverLeak: a token in the URL and one from token_env,
// against a host that does not exist. Neither token (nor its base64 form)
// appears in argv, the clone's config, the log, Acquire's error or
// Health; both reach git through its environment only.
func TestCredentialsNeverLeak(t *testing.T) {
	const urlToken, envToken = "FAKE-url-token-7d1c", "ghp_FAKEenvtoken4e2a"
	argvLog, envLog := wrapGit(t)
	var logs logtest.Buffer
	data := t.TempDir()
	m := newManager(t, []Spec{
		{Name: "inurl", URL: "https://bob:" + urlToken + "@askrepo-test.invalid/acme/x.git", Channels: []string{"*"}},
		{Name: "inenv", URL: "https://askrepo-test.invalid/acme/y.git", TokenEnv: "ASKREPO_TEST_TOKEN", Channels: []string{"*"}},
	}, Options{
		DataDir:    data,
		GitTimeout: 5 * time.Second,
		Logger:     newLogger(&logs),
		Env: func(k string) (string, bool) {
			if k == "ASKREPO_TEST_TOKEN" {
				return envToken, true
			}
			return "", false
		},
	})

	var texts []string
	for _, name := range []string{"inurl", "inenv"} {
		_, err := m.Acquire(t.Context(), name)
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Acquire(%s) = %v, want ErrUnavailable (the host does not exist)", name, err)
		}
		texts = append(texts, err.Error())
		if err := m.SyncNow(t.Context(), name); err != nil {
			texts = append(texts, err.Error())
		}
	}
	for _, h := range m.Health() {
		texts = append(texts, h.LastError, h.Source)
		if h.LastError == "" {
			t.Errorf("%s: Health has no error for a failed clone", h.Name)
		}
	}
	cfgInURL := readFile(t, filepath.Join(data, "repos", "inurl", "git", "config"))
	cfgInEnv := readFile(t, filepath.Join(data, "repos", "inenv", "git", "config"))
	if !strings.Contains(cfgInURL, "url = https://askrepo-test.invalid/acme/x.git\n") {
		t.Errorf("the clone's remote is not the URL without credentials:\n%s", cfgInURL)
	}
	argv := readFile(t, argvLog)
	texts = append(texts, logs.String(), argv, cfgInURL, cfgInEnv)

	secrets := []string{
		urlToken, envToken,
		base64.StdEncoding.EncodeToString([]byte("bob:" + urlToken)),
		base64.StdEncoding.EncodeToString([]byte("x-access-token:" + envToken)),
	}
	for _, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("secret %q leaked into:\n%s", s, text)
			}
		}
	}
	if !strings.Contains(argv, "fetch") {
		t.Fatalf("no fetch was run; argv log:\n%s", argv)
	}
	env := readFile(t, envLog)
	for _, want := range []string{
		"=http.https://askrepo-test.invalid/.extraHeader",
		"=Authorization: Basic " + secrets[2],
		"=Authorization: Basic " + secrets[3],
	} {
		if !strings.Contains(env, want) {
			t.Errorf("git's environment lacks %q", want)
		}
	}
}

// TestScrub covers text a failing git could print.
func TestScrub(t *testing.T) {
	a, err := newAuth(Spec{URL: "https://u:p4ssw0rd%2Fx@h.example/r.git"}, nil, hostKeys{})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"fatal: unable to access 'https://u:p4ssw0rd%2Fx@h.example/r.git/'":   "fatal: unable to access 'https://u:[redacted]@h.example/r.git/'",
		"password p4ssw0rd/x rejected":                                        "password [redacted] rejected",
		"header " + base64.StdEncoding.EncodeToString([]byte("u:p4ssw0rd/x")): "header [redacted]",
		"ssh://git@h.example/r.git is fine":                                   "ssh://git@h.example/r.git is fine",
		// URL parsers split user info at the last '@', so all of it goes.
		"fatal: 'http://bob:p@ss@example.com/x.git' failed": "fatal: 'http://bob:[redacted]@example.com/x.git' failed",
		"https://a:b:c@d@h.example/r.git":                   "https://a:[redacted]@h.example/r.git",
		"https://ghp_abcdefghij@github.com/o/r.git":         "https://[redacted]@github.com/o/r.git",
		"https://h.example:8443/r.git":                      "https://h.example:8443/r.git",
	} {
		if got := a.scrub(in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

// gitHTTP serves the bare repositories under root over git's smart HTTP
// protocol (git http-backend as a CGI program, as a real server runs it)
// and requires one of the given user:password pairs.
func gitHTTP(t *testing.T, root string, creds ...string) *httptest.Server {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Root: "/",
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		for _, c := range creds {
			if ok && c == user+":"+pass {
				backend.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTokenOverHTTP clones from a server that demands the token: from
// token_env (user x-access-token) and from the URL's userinfo (its user).
// A wrong token fails cleanly, without prompting and without the token in
// the error.
func TestTokenOverHTTP(t *testing.T) {
	up := newRemote(t)
	sha := up.commit("main", map[string]string{"f": "1"})
	srv := gitHTTP(t, filepath.Dir(up.Bare), "x-access-token:good-token-1234", "alice:url-token-5678")
	base := srv.URL + "/" + filepath.Base(up.Bare)
	env := map[string]string{"GOOD": "good-token-1234", "BAD": "bad-token-9999"}
	data := t.TempDir()
	m := newManager(t, []Spec{
		{Name: "env", URL: base, TokenEnv: "GOOD", Channels: []string{"*"}},
		{Name: "url", URL: strings.Replace(base, "://", "://alice:url-token-5678@", 1), Channels: []string{"*"}},
		{Name: "bad", URL: base, TokenEnv: "BAD", Channels: []string{"*"}},
	}, Options{DataDir: data, GitTimeout: 20 * time.Second, Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})

	for _, name := range []string{"env", "url"} {
		l, err := m.Acquire(t.Context(), name)
		if err != nil {
			t.Fatalf("Acquire(%s): %v", name, err)
		}
		if l.Commit != sha {
			t.Errorf("%s: Commit = %s, want %s", name, l.Commit, sha)
		}
		if l.Remote != base {
			t.Errorf("%s: Remote = %q, want %q", name, l.Remote, base)
		}
		l.Release()
		cfg := readFile(t, filepath.Join(data, "repos", name, "git", "config"))
		if strings.Contains(cfg, "token") || strings.Contains(cfg, "alice") {
			t.Errorf("%s: the clone's config holds a credential:\n%s", name, cfg)
		}
	}
	_, err := m.Acquire(t.Context(), "bad")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Acquire(bad) = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "bad-token-9999") {
		t.Errorf("error shows the token: %v", err)
	}
}

// TestSSHKey: git reaches an ssh remote through the ssh program with the
// configured key, in batch mode (never a prompt), the key path taken from
// ssh_key or from the variable ssh_key_env names. A fake ssh on PATH
// records its arguments and refuses, as an unreachable host would.
func TestSSHKey(t *testing.T) {
	key := filepath.Join(t.TempDir(), "deploy key")
	if err := os.WriteFile(key, []byte("not really a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(t.TempDir(), "known hosts")
	if err := os.WriteFile(pinned, []byte("git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJdD7y3aLq454yWBdwLWbieU1ebz9/cu7/QEXn9OIeZJ\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, knownHosts string
		check            string // StrictHostKeyChecking
	}{
		{"first key trusted and kept in the data dir", "", "accept-new"},
		{"pinned by BOT_SSH_KNOWN_HOSTS", pinned, "yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			file := tc.knownHosts
			if file == "" {
				file = filepath.Join(dataDir, "known_hosts")
			}
			got := cloneWithFakeSSH(t, []Spec{
				{Name: "file", URL: "git@git.example.com:acme/a.git", SSHKey: key, Channels: []string{"*"}},
				{Name: "env", URL: "ssh://git@git.example.com:2222/acme/b.git", SSHKeyEnv: "DEPLOY_KEY", Channels: []string{"*"}},
			}, Options{DataDir: dataDir, KnownHosts: tc.knownHosts, GitTimeout: 10 * time.Second, Env: func(k string) (string, bool) { return key, k == "DEPLOY_KEY" }})
			lines := strings.Split(strings.TrimSpace(got), "\n")
			if len(lines) != 2 {
				t.Fatalf("ssh ran %d times, want 2:\n%s", len(lines), got)
			}
			for _, want := range []string{
				"[-o][BatchMode=yes][-o][StrictHostKeyChecking=" + tc.check + "][-o][UserKnownHostsFile=" + file + "][-i][" + key + "][-o][IdentitiesOnly=yes]",
				"[git@git.example.com][git-upload-pack 'acme/a.git']",
				"[-p][2222][git@git.example.com][git-upload-pack '/acme/b.git']",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("ssh was not run with %q; it got:\n%s", want, got)
				}
			}
		})
	}
}

// TestSSHKnownHostsMissing: a pinned known_hosts file that is not there
// is a start error naming the setting, not a host key failure at every
// clone.
func TestSSHKnownHostsMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "known_hosts")
	specs := []Spec{{Name: "a", URL: "git@git.example.com:acme/a.git", Channels: []string{"*"}}}
	_, err := New(t.Context(), specs, Options{DataDir: t.TempDir(), KnownHosts: missing})
	if err == nil || !strings.Contains(err.Error(), "BOT_SSH_KNOWN_HOSTS "+missing+": not a readable file") {
		t.Errorf("New = %v, want a BOT_SSH_KNOWN_HOSTS error", err)
	}
	if err := Check(specs, t.TempDir(), missing, nil); err == nil || !strings.Contains(err.Error(), "BOT_SSH_KNOWN_HOSTS") {
		t.Errorf("Check = %v, want a BOT_SSH_KNOWN_HOSTS error", err)
	}
	// https remotes never read it.
	if err := Check([]Spec{{Name: "b", URL: "https://h.example/b.git", Channels: []string{"*"}}}, t.TempDir(), missing, nil); err != nil {
		t.Errorf("Check of an https repo = %v, want nil", err)
	}
}

// cloneWithFakeSSH starts a Manager over specs with an ssh on PATH that
// records its arguments and refuses, as an unreachable host would, and
// returns the records, one line per run.
func cloneWithFakeSSH(t *testing.T, specs []Spec, opts Options) string {
	t.Helper()
	bin := t.TempDir()
	argsLog := filepath.Join(bin, "ssh.log")
	// Both repositories clone at once: each call appends its record in one
	// write, so the two records cannot interleave.
	script := "#!/bin/sh\nline=$(printf '[%s]' \"$@\")\nprintf '%s\\n' \"$line\" >> '" + argsLog + "'\necho 'ssh: connect to host refused' >&2\nexit 255\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	m := newManager(t, specs, opts)
	for _, h := range m.Health() {
		if h.Available || !strings.Contains(h.LastError, "connect to host refused") {
			t.Errorf("%s: Health = %+v, want unavailable with ssh's error", h.Name, h)
		}
	}
	return readFile(t, argsLog)
}
