package repos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	doc := `
openai:
  model: gpt-4.1-mini
repos:
  - name: payments
    url: https://github.com/acme/payments.git
    branch: main
    channels: [C0123PAY, C0456OPS]
    default_for: [C0456OPS]
    deny: ["*.tfvars"]
    web_url: https://github.com/acme/payments
    web_kind: github
    token_env: GITHUB_TOKEN
  - name: infra
    url: git@gitlab.example.com:ops/infra.git
    channels: ["C0456OPS", dm]
    ssh_key: /run/secrets/deploy_key
  - name: docs
    path: /srv/checkouts/docs
    channels: ["*"]
`
	got, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Spec{
		{Name: "payments", URL: "https://github.com/acme/payments.git", Branch: "main",
			Channels: []string{"C0123PAY", "C0456OPS"}, DefaultFor: []string{"C0456OPS"}, Deny: []string{"*.tfvars"},
			WebURL: "https://github.com/acme/payments", WebKind: "github", TokenEnv: "GITHUB_TOKEN"},
		{Name: "infra", URL: "git@gitlab.example.com:ops/infra.git", Channels: []string{"C0456OPS", "dm"}, SSHKey: "/run/secrets/deploy_key"},
		{Name: "docs", Path: "/srv/checkouts/docs", Channels: []string{"*"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}

	for name, doc := range map[string]string{
		"no repos key": "openai:\n  model: x\n",
		"empty file":   "",
		"null repos":   "repos:\n",
	} {
		if specs, err := Parse([]byte(doc)); err != nil || specs != nil {
			t.Errorf("%s: Parse = %v, %v; want nothing", name, specs, err)
		}
	}
}

// TestValidateAllAtOnce: one file with many mistakes reports each one.
func TestValidateAllAtOnce(t *testing.T) {
	doc := `repos:
  - name: Payments
    url: https://github.com/acme/payments.git
    channels: [C1]
  - name: dup
    path: /a
    channels: ["*"]
  - name: dup
    path: /b
    url: https://h/x.git
    channels: ["*"]
  - name: nothing
    channels: ["*"]
  - name: scheme
    url: ftp://h/x.git
    channels: ["*"]
  - name: inject
    url: --upload-pack=touch /tmp/pwned
    channels: ["*"]
  - name: branch
    url: https://h/x.git
    branch: --help
    channels: ["*"]
  - name: branch2
    url: https://h/x.git
    branch: a..b
    channels: ["*"]
  - name: nochan
    path: /c
  - name: badchan
    path: /d
    channels: ["#general"]
  - name: deffor
    path: /e
    channels: [C1]
    default_for: [C2]
  - name: tokpasted
    url: https://h/x.git
    token_env: ghp_abcdefghijklmnop
    channels: ["*"]
  - name: sshtok
    url: git@h:x.git
    token_env: TOKEN
    channels: ["*"]
  - name: cleartext
    url: http://h.example/x.git
    token_env: TOKEN
    channels: ["*"]
  - name: kind
    path: /f
    web_kind: sourcehut
    web_url: ftp://x
    channels: ["*"]
  - name: weburl
    path: /f
    web_url: https://git.acme.internal/acme/x
    channels: ["*"]
  - name: typo
    path: /g
    chanels: ["*"]
  - name: localbranch
    path: /h
    branch: main
    channels: ["*"]
  - name: two
    url: https://h/x.git
    channels: ["*"]
    default_for: [C9]
  - name: three
    url: https://h/y.git
    channels: [C9]
    default_for: [C9]
`
	_, err := Parse([]byte(doc))
	if err == nil {
		t.Fatal("Parse: no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`repos[0] (Payments): name "Payments": use up to 64 lowercase`,
		`repos[2] (dup): name "dup" is used twice`,
		`repos[2] (dup): set path or url, not both`,
		`repos[3] (nothing): set path (a local checkout) or url`,
		`repos[4] (scheme): url "ftp://h/x.git": want https://`,
		`repos[5] (inject): url "--upload-pack=touch /tmp/pwned": must not start with '-'`,
		`repos[6] (branch): branch "--help": must not start with '-'`,
		`repos[7] (branch2): branch "a..b": must not contain '..'`,
		`repos[8] (nochan): channels is empty`,
		`repos[9] (badchan): channels: "#general" is not a channel ID`,
		`repos[10] (deffor): default_for: "C2" is not among the channels`,
		`repos[11] (tokpasted): token_env "ghp…[redacted]": give the name of an environment variable`,
		`repos[12] (sshtok): token_env applies to https URLs`,
		`repos[13] (cleartext): url "http://h.example/x.git": a token would cross the network in clear text`,
		`repos[14] (kind): web_kind "sourcehut": want one of github, gitlab`,
		`repos[15] (weburl): web_url: cannot tell the kind of web view at "git.acme.internal"`,
		`line 60: repos[16]: unknown key "chanels"`,
		`repos[17] (localbranch): branch, token_env, ssh_key and ssh_key_env apply to url repos only`,
		`repos[19] (three): default_for: "C9" is already the default of "two"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q", want)
		}
	}
	if strings.Contains(msg, "ghp_abcdefghijklmnop") {
		t.Error("error repeats a token pasted into token_env")
	}
	if t.Failed() {
		t.Logf("full error:\n%s", msg)
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url, token string
		ok         bool
	}{
		{"https://github.com/acme/x.git", "", true},
		{"http://127.0.0.1:8080/x.git", "T", true},
		{"ssh://git@github.com/acme/x.git", "", true},
		{"git@github.com:acme/x.git", "", true},
		{"file:///srv/git/x.git", "", true},
		{"file://relative/x.git", "", false},
		{"ext::sh -c touch% /tmp/pwned", "", false},
		{"/srv/git/x.git", "", false},
		{"ssh://git:pw@github.com/acme/x.git", "", false},
		{"https://u:p@github.com/x.git", "T", false},
		{"https:///x.git", "", false},
		// A pasted token as the URL's user would be dropped, not sent.
		{"https://ghp_abcdefghijklmnop@github.com/acme/x.git", "", false},
		{"https://alice@gitlab.example/x.git", "T", true},
	} {
		err := checkURL(Spec{URL: tc.url, TokenEnv: tc.token})
		if (err == nil) != tc.ok {
			t.Errorf("checkURL(%q, token %q) = %v, want ok=%v", tc.url, tc.token, err, tc.ok)
		}
		if err != nil && (strings.Contains(err.Error(), ":p@") || strings.Contains(err.Error(), "ghp_")) {
			t.Errorf("checkURL error shows the credential: %v", err)
		}
		if err != nil && strings.Contains(tc.url, "ghp_") && !strings.Contains(err.Error(), "token_env") {
			t.Errorf("checkURL(%q) = %v, want it to point at token_env", tc.url, err)
		}
	}
}

func TestSingle(t *testing.T) {
	for name, want := range map[string]string{
		"askrepo":    "askrepo",
		"My Repo":    "my-repo",
		".hidden":    "hidden",
		"...":        "repo",
		"über-tools": "ber-tools",
	} {
		got := Single(name, "/x", nil).Name
		if got != want {
			t.Errorf("Single(%q).Name = %q, want %q", name, got, want)
		}
		if err := Validate([]Spec{Single(name, "/x", nil)}); err != nil {
			t.Errorf("Single(%q) does not validate: %v", name, err)
		}
	}
}

// TestFromConfig: REPO_PATH alone is one repo serving everything; a
// BOT_CONFIG file with repos replaces it.
func TestFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Config{RepoPath: dir, RepoName: "Askrepo", RepoDeny: []string{"*.tfvars"}}
	specs, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []Spec{{Name: "askrepo", Path: dir, Channels: []string{"*"}, Deny: []string{"*.tfvars"}}}
	if diff := cmp.Diff(want, specs); diff != "" {
		t.Errorf("REPO_PATH mode (-want +got):\n%s", diff)
	}
	m := newManager(t, specs, Options{})
	for _, ch := range []string{"C0123", "D0456", "G789"} {
		if repo, _, err := m.Resolve(ch, "how?"); err != nil || repo != "askrepo" {
			t.Errorf("Resolve(%s) = %q, %v; want askrepo", ch, repo, err)
		}
	}
	l := acquire(t, m, "askrepo")
	if l.Dir != dir || l.Commit != "" {
		t.Errorf("lease = %s at %q, want %s and no commit (not a git checkout)", l.Dir, l.Commit, dir)
	}
	l.Release()

	file := filepath.Join(t.TempDir(), "askrepo.yaml")
	os.WriteFile(file, []byte("repos:\n  - name: docs\n    path: "+dir+"\n    channels: [C1]\n"), 0o644)
	cfg.ConfigFile = file
	specs, err = FromConfig(cfg)
	if err != nil || len(specs) != 1 || specs[0].Name != "docs" {
		t.Errorf("with a repos list: %+v, %v; want the docs repo only", specs, err)
	}
	// --repo: the named checkout alone, whatever the file lists.
	if specs, err = PathOnly(cfg); err != nil || len(specs) != 1 || specs[0].Name != "askrepo" || specs[0].Path != dir {
		t.Errorf("PathOnly with a repos list: %+v, %v; want REPO_PATH alone", specs, err)
	}
	os.WriteFile(file, []byte("log:\n  level: info\n"), 0o644)
	if specs, err = FromConfig(cfg); err != nil || specs[0].Name != "askrepo" {
		t.Errorf("file without repos: %+v, %v; want REPO_PATH", specs, err)
	}
	os.WriteFile(file, []byte("repos:\n  - name: x\n"), 0o644)
	if _, err = FromConfig(cfg); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("invalid repos: %v, want an error naming the file", err)
	}
}
