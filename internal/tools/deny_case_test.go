package tools

import (
	"bufio"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDenyDefaultsCoverCredentialFiles names the files the default list is
// for, in the spellings they turn up with, next to look-alikes that are code
// or documentation and must stay readable.
func TestDenyDefaultsCoverCredentialFiles(t *testing.T) {
	d := mustDeny(t, DefaultDeny)
	idx := newDenyIndex(d)
	denied := []string{
		".env", ".ENV", "config/.Env.Production", "ID_RSA", "keys/Id_Ed25519.pub", "certs/Server.PEM", "tls.KEY",
		"deploy/putty.ppk", "android/release.keystore", "app/KeyStore.JKS", "cert.P12", "win.pfx",
		".GIT/config", "sub/.git-credentials", ".netrc", "_netrc", ".pgpass", ".npmrc", ".pypirc",
		"web/.htpasswd", "nginx/htpasswd",
		"terraform.tfstate", "infra/prod/Terraform.TFSTATE", "infra/terraform.tfstate.backup", "infra/.terraform/terraform.tfstate",
		".aws/credentials", "home/.aws/config", ".azure/msal_token_cache.json",
		"home/.config/gcloud/credentials.db", "application_default_credentials.json",
		"credentials.json", "service-account.json", "deploy/service-account-prod.json", "ci/builder-sa-key.json",
		".kube/config", "ops/.KUBE/Config", "prod.kubeconfig", "kubeconfig.yaml", "ops/kubeconfig.yml",
		".docker/config.json", "ci/.docker/config.json", ".dockercfg",
		"config/secrets.yml", "helm/Secrets.YAML",
	}
	allowed := []string{
		".env.example", "README.md", "keys/README.md", "docs/ssh-keys.md", "pkg/kubeconfig/kubeconfig.go",
		"cmd/kubeadm/app/phases/kubeconfig/kubeconfig_test.go", "terraform/main.tf", "terraform/prod.tfvars",
		".docker/Dockerfile", "docker/config.json", ".kube/README.md", "internal/secrets/secrets.go",
		"service.json", "aws/credentials.go", ".github/workflows/ci.yml", "keystore.go",
	}
	for _, p := range denied {
		if !d.denied(p) || !idx.denied(p) {
			t.Errorf("%s is not denied by the defaults", p)
		}
	}
	for _, p := range allowed {
		if d.denied(p) || idx.denied(p) {
			t.Errorf("%s is denied by the defaults; it holds no secret", p)
		}
	}
}

// TestDenyIgnoresCase: a secret file's name in other letters is the same
// file on a case-insensitive file system and the same secret anywhere, so
// user patterns fold as the defaults do, also beyond ASCII.
func TestDenyIgnoresCase(t *testing.T) {
	checkDenied(t, []denyCase{
		{[]string{"Secrets/"}, "secrets/a.txt", true},
		{[]string{"secrets/"}, "SECRETS/a.txt", true},
		{[]string{"config/*.PEM"}, "CONFIG/b.pem", true},
		{[]string{"*.pem", "!Test.pem"}, "TEST.PEM", false},
		{[]string{"[a-c].key"}, "B.KEY", true},
		{[]string{"{x,y}.Key"}, "Y.kEY", true},
		{[]string{"**/Deep/*.txt"}, "a/DEEP/x.TXT", true},
		{[]string{"kelvin"}, "\u212Aelvin", true}, // KELVIN SIGN folds to k
		{[]string{"ÉTÉ"}, "docs/été", true},
		{[]string{"a\xffb"}, "A\xffB", true},
	})
}

// TestDenyCaseEveryTool puts upper-case secret files in a git checkout and
// asks every tool for them: none may be opened, listed, globbed, searched,
// or reach a pickaxe.
func TestDenyCaseEveryTool(t *testing.T) {
	dir := newHist(t, []histCommit{{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add files", write: map[string]string{
		".ENV": "TOKEN=upper-env-secret\n", "keys/ID_RSA": "upper-rsa-secret\n", "certs/Server.PEM": "upper-pem-secret\n",
		"main.go": "package main\n",
	}}}).dir
	ws := wsNew(t, dir, WorkspaceOptions{})
	for _, p := range []string{".ENV", ".env", "keys/ID_RSA", "keys/id_rsa", "certs/Server.PEM", "CERTS/SERVER.PEM"} {
		if _, _, err := ws.Open(p); !errors.Is(err, ErrDenied) {
			t.Errorf("Open(%q) = %v, want ErrDenied", p, err)
		}
	}
	files, err := ws.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"main.go"}, files); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	glob, list, search, log := NewGlob(ws, Options{}), NewListFiles(ws, Options{}), NewSearchCode(ws, Options{}), NewGitLog(ws, Options{})
	for _, c := range []struct {
		tool Tool
		args map[string]any
	}{
		{glob, map[string]any{"pattern": "**/*"}},
		{glob, map[string]any{"pattern": "*.PEM"}},
		{list, map[string]any{"recursive": true}},
		{search, map[string]any{"pattern": "secret", "ignore_case": true}},
		{search, map[string]any{"pattern": "upper", "path": "keys"}},
		{log, map[string]any{"pickaxe": "upper-env-secret"}},
		{log, map[string]any{"pickaxe": "upper-rsa-secret"}},
		{log, map[string]any{"pickaxe": "upper-pem-secret"}},
	} {
		out, err := runGitTool(t, c.tool, c.args)
		if err != nil {
			continue
		}
		// The model's own arguments come back in the answer; the files,
		// their text and, for a pickaxe, the commit that added them may
		// not.
		for _, leak := range []string{"Add files", "ID_RSA", ".ENV", "Server.PEM", "TOKEN=", "rsa-secret\n", "pem-secret\n"} {
			if strings.Contains(out, leak) {
				t.Errorf("%s %v shows %q:\n%s", c.tool.Definition().Name, c.args, leak, out)
			}
		}
	}
}

// TestReadmeListsDefaultDeny keeps the README's list of secret files equal
// to DefaultDeny: the README is where an operator learns what the model
// cannot read.
func TestReadmeListsDefaultDeny(t *testing.T) {
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const start, end = "<!-- deny-list: kept equal to tools.DefaultDeny by a test -->", "<!-- end of deny-list -->"
	var got []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == start:
			in = true
		case line == end:
			in = false
		case in && strings.HasPrefix(line, "- "):
			// "- `.env`, `.env.*`, `!.env.example`: why"; the code
			// spans are the patterns.
			spans := strings.Split(line, "`")
			for i := 1; i < len(spans)-1; i += 2 {
				got = append(got, spans[i])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatalf("README.md has no deny-list section between %q and %q", start, end)
	}
	if diff := cmp.Diff(DefaultDeny, got); diff != "" {
		t.Errorf("README.md's deny-list differs from DefaultDeny (-code +README):\n%s", diff)
	}
}
