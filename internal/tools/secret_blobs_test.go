package tools

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The secrets of secretHistoryFixture: no tool may show them or confirm
// them, under any name.
const (
	envSecretText   = "APP=shop\nDB_PASSWORD=rename-back-secret\n"
	keySecretText   = "-----BEGIN KEY-----\nmerged-key-secret\n-----END KEY-----\n"
	pemSecretText   = "upper-case-pem-secret\n"
	danglingSecret  = "TOKEN=dangling-secret\n"
	tweakedEnvText  = "APP=shop\nDB_PASSWORD=rename-back-secreT\n"
	publicNotesText = "meeting notes\n"
)

var fixtureSecrets = []string{"rename-back-secret", "merged-key-secret", "upper-case-pem-secret", "dangling-secret"}

// secretHistory is secretHistoryFixture: the repository and what the
// tests need to name in it.
type secretHistory struct {
	histRepo
	dangling string // a commit no ref reaches, renaming a secret to public.txt
	envBlob  string // the blob id of envSecretText
}

// secretHistoryFixture builds a history in which secret content moves to
// public names every way git allows:
//
//	Add app                 app.go, notes.txt (public)
//	Add secret              .env (envSecretText), Server.PEM
//	Hide it                 .env -> hidden.txt (the same blob)
//	Restore it              hidden.txt -> .env
//	Copy it and touch app   .env copied to docs/copy.txt, docs/index.md added, app.go changed
//	Merge key branch        a branch added deploy.key and renamed it to deploy.txt
//	Tweak a copy            tweaked.txt: .env with one byte changed
//
// plus an annotated tag v1 on "Hide it", a tag pointing at the secret's
// blob, a commit no ref reaches that renames a secret to public.txt, and
// scratch.txt in the working tree, an uncommitted copy of the secret.
func secretHistoryFixture(t testing.TB) secretHistory {
	t.Helper()
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	sha := histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add app", write: map[string]string{"app.go": "package app\n", "notes.txt": publicNotesText}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Add secret", write: map[string]string{".env": envSecretText, "Server.PEM": pemSecretText}},
		{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Hide it", rename: [2]string{".env", "hidden.txt"}},
		{who: bob, date: "2024-01-13T10:00:00+00:00", msg: "Restore it", rename: [2]string{"hidden.txt", ".env"}},
		{who: carol, date: "2024-01-14T10:00:00+00:00", msg: "Copy it and touch app", write: map[string]string{"docs/copy.txt": envSecretText, "docs/index.md": "docs index\n", "app.go": "package app\n\nvar x = 1\n"}},
	})
	env := func(date string) []string {
		return []string{"GIT_AUTHOR_NAME=Bob", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_AUTHOR_DATE=" + date,
			"GIT_COMMITTER_NAME=Bob", "GIT_COMMITTER_EMAIL=b@example.com", "GIT_COMMITTER_DATE=" + date}
	}
	histGit(t, dir, nil, "checkout", "-q", "-b", "keys", sha["Add app"])
	for k, v := range histCommits(t, dir, []histCommit{
		{who: bob, date: "2024-01-15T10:00:00+00:00", msg: "Add deploy key", write: map[string]string{"deploy.key": keySecretText}},
		{who: bob, date: "2024-01-16T10:00:00+00:00", msg: "Rename deploy key", rename: [2]string{"deploy.key", "deploy.txt"}},
	}) {
		sha[k] = v
	}
	histGit(t, dir, nil, "checkout", "-q", "main")
	histGit(t, dir, env("2024-01-17T10:00:00+00:00"), "merge", "-q", "--no-ff", "-m", "Merge key branch", "keys")
	sha["Merge key branch"] = strings.TrimSpace(histGit(t, dir, nil, "rev-parse", "HEAD"))
	// The branch is gone: only the merge reaches its commits now.
	histGit(t, dir, nil, "branch", "-q", "-D", "keys")
	for k, v := range histCommits(t, dir, []histCommit{
		{who: carol, date: "2024-01-18T10:00:00+00:00", msg: "Tweak a copy", write: map[string]string{"tweaked.txt": tweakedEnvText}},
	}) {
		sha[k] = v
	}
	histGit(t, dir, env("2024-01-19T10:00:00+00:00"), "tag", "-a", "v1", "-m", "release", sha["Hide it"])
	envBlob := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", sha["Add secret"]+":.env"))
	histGit(t, dir, nil, "tag", "blobtag", envBlob)

	// A commit no ref or reflog reaches, as a rewritten history or a
	// fetched but unmerged object leaves behind: a secret added, then
	// renamed to public.txt.
	blob := strings.TrimSpace(histGitIn(t, dir, danglingSecret, "hash-object", "-w", "--stdin"))
	tree1 := strings.TrimSpace(histGitIn(t, dir, "100644 blob "+blob+"\t.env\n", "mktree"))
	tree2 := strings.TrimSpace(histGitIn(t, dir, "100644 blob "+blob+"\tpublic.txt\n", "mktree"))
	c1 := strings.TrimSpace(histGit(t, dir, env("2024-01-20T10:00:00+00:00"), "commit-tree", "-m", "dangling secret", tree1))
	c2 := strings.TrimSpace(histGit(t, dir, env("2024-01-21T10:00:00+00:00"), "commit-tree", "-p", c1, "-m", "dangling rename", tree2))

	wsWriteFiles(t, dir, map[string]string{"scratch.txt": envSecretText})
	return secretHistory{histRepo: histRepo{dir: dir, sha: sha}, dangling: c2, envBlob: envBlob}
}

// assertNoSecret fails when a tool's answer or error holds a secret. The
// model's own arguments, which answers quote, are left out.
func assertNoSecret(t *testing.T, args map[string]any, out string, err error) {
	t.Helper()
	text := out
	if err != nil {
		text += "\n" + err.Error()
	}
	for _, v := range args {
		if s, ok := v.(string); ok {
			text = strings.ReplaceAll(text, strconv.Quote(s), "")
		}
	}
	for _, s := range fixtureSecrets {
		if strings.Contains(text, s) {
			t.Errorf("the answer holds %q:\n%s", s, text)
		}
	}
}

// TestSecretContentUnderPublicNames asks every tool for a secret's
// content through every public name it had: renamed, renamed back,
// copied, merged from a deleted branch, in a commit no ref reaches, by
// tag, by blob id. None may show it.
func TestSecretContentUnderPublicNames(t *testing.T) {
	repo := secretHistoryFixture(t)
	ws := wsNew(t, repo.dir, WorkspaceOptions{})
	gitLog, gitShow, gitBlame := NewGitLog(ws, Options{}), NewGitShow(ws, Options{}), NewGitBlame(ws, Options{})
	held := "[not shown, their content was once in a secret file: "
	tests := []struct {
		name     string
		tool     Tool
		args     map[string]any
		contains string // in the answer, or in the error when is is set
		is       error
	}{
		{"show the rename to a public name", gitShow, map[string]any{"commit": repo.sha["Hide it"], "path": "hidden.txt"}, held + "hidden.txt]", nil},
		{"show the rename's directory", gitShow, map[string]any{"commit": repo.sha["Hide it"], "path": "."}, "", nil},
		{"show the rename back", gitShow, map[string]any{"commit": repo.sha["Restore it"], "path": "hidden.txt"}, held + "hidden.txt]", nil},
		{"show the copy", gitShow, map[string]any{"commit": repo.sha["Copy it and touch app"], "path": "docs/copy.txt"}, held + "docs/copy.txt]", nil},
		{"show the copy's directory", gitShow, map[string]any{"commit": repo.sha["Copy it and touch app"], "path": "docs"}, held + "docs/copy.txt]", nil},
		{"a commit touching both", gitShow, map[string]any{"commit": repo.sha["Copy it and touch app"], "path": "docs"}, "+docs index\n", nil},
		{"the merge", gitShow, map[string]any{"commit": repo.sha["Merge key branch"], "path": "deploy.txt"}, held + "deploy.txt]", nil},
		{"the branch's rename", gitShow, map[string]any{"commit": repo.sha["Rename deploy key"], "path": "deploy.txt"}, held + "deploy.txt]", nil},
		{"an annotated tag", gitShow, map[string]any{"commit": "v1", "path": "hidden.txt"}, held + "hidden.txt]", nil},
		{"a commit no ref reaches", gitShow, map[string]any{"commit": repo.dangling, "path": "public.txt"}, held + "public.txt]", nil},
		{"a blob id", gitShow, map[string]any{"commit": repo.envBlob, "path": "hidden.txt"}, "no commit named", nil},
		{"an abbreviated blob id", gitShow, map[string]any{"commit": repo.envBlob[:8]}, "no commit named", nil},
		{"a tag of a blob", gitShow, map[string]any{"commit": "blobtag"}, "no commit named", nil},
		{"commit:path", gitShow, map[string]any{"commit": repo.sha["Hide it"] + ":hidden.txt"}, `contains ":"`, nil},
		{"a tree", gitShow, map[string]any{"commit": repo.sha["Hide it"] + "^{tree}"}, "no commit named", nil},
		{"blame the renamed secret", gitBlame, map[string]any{"path": "hidden.txt", "commit": repo.sha["Hide it"]}, "", ErrDenied},
		{"blame the copy", gitBlame, map[string]any{"path": "docs/copy.txt"}, "", ErrDenied},
		{"blame the merged key", gitBlame, map[string]any{"path": "deploy.txt"}, "", ErrDenied},
		{"blame a line range past the end", gitBlame, map[string]any{"path": "docs/copy.txt", "start": 50}, "", ErrDenied},
		{"blame in a commit no ref reaches", gitBlame, map[string]any{"path": "public.txt", "commit": repo.dangling}, "", ErrDenied},
		{"pickaxe", gitLog, map[string]any{"pickaxe": "rename-back-secret"}, "no commits", nil},
		{"pickaxe on the copy", gitLog, map[string]any{"pickaxe": "rename-back-secret", "path": "docs/copy.txt"}, "no commits", nil},
		{"pickaxe on the renamed file", gitLog, map[string]any{"pickaxe": "rename-back-secret", "path": "hidden.txt"}, "no commits", nil},
		{"pickaxe for the merged key", gitLog, map[string]any{"pickaxe": "merged-key-secret"}, "no commits", nil},
		{"read the copy", NewReadFile(ws, Options{}), map[string]any{"path": "docs/copy.txt"}, deniedError("docs/copy.txt").Error(), ErrDenied},
		{"read the merged key", NewReadFile(ws, Options{}), map[string]any{"path": "deploy.txt"}, "", ErrDenied},
		{"read an uncommitted copy", NewReadFile(ws, Options{}), map[string]any{"path": "scratch.txt"}, "", ErrDenied},
		{"search", NewSearchCode(ws, Options{}), map[string]any{"pattern": "secret"}, "", nil},
		{"search the copy by name", NewSearchCode(ws, Options{}), map[string]any{"pattern": "DB_", "path": "docs/copy.txt"}, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runGitTool(t, tc.tool, tc.args)
			assertNoSecret(t, tc.args, got, err)
			switch {
			case tc.is != nil:
				if !errors.Is(err, tc.is) {
					t.Fatalf("error = %v, want %v; output:\n%s", err, tc.is, got)
				}
				if !strings.Contains(err.Error(), tc.contains) {
					t.Errorf("error = %q, want it to contain %q", err, tc.contains)
				}
			case strings.HasPrefix(tc.contains, "no commit named") || strings.HasPrefix(tc.contains, "contains"):
				if err == nil || !strings.Contains(err.Error(), tc.contains) {
					t.Errorf("error = %v, want one containing %q; output:\n%s", err, tc.contains, got)
				}
			case err != nil:
				t.Fatal(err)
			case !strings.Contains(got, tc.contains):
				t.Errorf("output lacks %q:\n%s", tc.contains, got)
			}
		})
	}
}

// TestSecretContentLimits pins what stays visible: public files, a public
// file's own history, and a secret changed by one byte after it was
// copied, which is a different blob.
func TestSecretContentLimits(t *testing.T) {
	repo := secretHistoryFixture(t)
	ws := wsNew(t, repo.dir, WorkspaceOptions{})
	for _, tc := range []struct {
		tool Tool
		args map[string]any
		want string
	}{
		{NewReadFile(ws, Options{}), map[string]any{"path": "notes.txt"}, "meeting notes"},
		{NewGitBlame(ws, Options{}), map[string]any{"path": "app.go"}, "var x = 1"},
		{NewGitShow(ws, Options{}), map[string]any{"commit": repo.sha["Add app"], "path": "notes.txt"}, "+meeting notes"},
		{NewGitLog(ws, Options{}), map[string]any{"pickaxe": "var x"}, "Copy it and touch app"},
		{NewReadFile(ws, Options{}), map[string]any{"path": "tweaked.txt"}, "rename-back-secreT"},
	} {
		got, err := runGitTool(t, tc.tool, tc.args)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.tool.Definition().Name, tc.args, err)
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s %v lacks %q:\n%s", tc.tool.Definition().Name, tc.args, tc.want, got)
		}
	}
}

// TestSecretBlobsFollowNewHistory: the set is rebuilt when a ref moves, so
// a secret committed and renamed after the first call is caught.
func TestSecretBlobsFollowNewHistory(t *testing.T) {
	repo := secretHistoryFixture(t)
	ws := wsNew(t, repo.dir, WorkspaceOptions{})
	read := NewReadFile(ws, Options{})
	if _, err := runGitTool(t, read, map[string]any{"path": "notes.txt"}); err != nil {
		t.Fatal(err)
	}
	histCommits(t, repo.dir, []histCommit{
		{who: alice, date: "2024-02-01T10:00:00+00:00", msg: "New secret", write: map[string]string{"id_ed25519": "fresh-key-secret\n"}},
		{who: alice, date: "2024-02-02T10:00:00+00:00", msg: "Hide new secret", rename: [2]string{"id_ed25519", "fresh.txt"}},
	})
	got, err := runGitTool(t, read, map[string]any{"path": "fresh.txt"})
	if !errors.Is(err, ErrDenied) {
		t.Errorf("read fresh.txt: %v, want ErrDenied; output:\n%s", err, got)
	}
}

// TestSecretBlobsSHA256: a SHA-256 repository names blobs by another hash,
// which the working-tree check must use too.
func TestSecretBlobsSHA256(t *testing.T) {
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q", "--object-format=sha256")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add secret", write: map[string]string{".env": envSecretText}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Hide it", rename: [2]string{".env", "hidden.txt"}},
	})
	ws := wsNew(t, dir, WorkspaceOptions{})
	got, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": "hidden.txt"})
	if !errors.Is(err, ErrDenied) {
		t.Errorf("read hidden.txt: %v, want ErrDenied; output:\n%s", err, got)
	}
	args := map[string]any{"path": "hidden.txt"}
	got, err = runGitTool(t, NewGitShow(ws, Options{}), args)
	assertNoSecret(t, args, got, err)
}

// TestSecretBlobsFailClosed: when git cannot list the history's secret
// blobs (it fails, or outlives the call), the history tools show no file
// content and say why.
func TestSecretBlobsFailClosed(t *testing.T) {
	repo := secretHistoryFixture(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name, body string
		timeout    time.Duration
	}{
		{"git fails", `case "$*" in *--reflog*) echo "fatal: bad object" >&2; exit 128;; esac; exec ` + real + ` "$@"` + "\n", 0},
		{"git hangs", `case "$*" in *--reflog*) exec sleep 5;; esac; exec ` + real + ` "$@"` + "\n", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := writeScript(t, filepath.Join(t.TempDir(), "git"), tc.body)
			opts := GitOptions{Binary: bin, Timeout: tc.timeout}
			gitLog, gitShow, gitBlame := gitTools(t, repo.dir, opts)
			for _, c := range []struct {
				tool Tool
				args map[string]any
			}{
				{gitShow, map[string]any{"commit": repo.sha["Hide it"], "path": "hidden.txt"}},
				{gitBlame, map[string]any{"path": "docs/copy.txt"}},
				{gitLog, map[string]any{"pickaxe": "rename-back-secret"}},
			} {
				start := time.Now()
				got, err := runGitTool(t, c.tool, c.args)
				assertNoSecret(t, c.args, got, err)
				if !errors.Is(err, ErrSecretsUnknown) {
					t.Errorf("%s: error = %v, want ErrSecretsUnknown; output:\n%s", c.tool.Definition().Name, err, got)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("%s took %s", c.tool.Definition().Name, d)
				}
			}
		})
	}
}

// TestSecretBlobsOutsideGit: a checkout that is not a repository, or
// whose git directory is refused (its .git points elsewhere), has no
// history the tools may read or hide, and its files read as usual.
func TestSecretBlobsOutsideGit(t *testing.T) {
	plain := t.TempDir()
	wsWriteFiles(t, plain, map[string]string{"a.txt": envSecretText})
	foreign := t.TempDir()
	wsWriteFiles(t, foreign, map[string]string{"a.txt": envSecretText, ".git": "gitdir: " + secretHistoryFixture(t).dir + "/.git\n"})
	for name, dir := range map[string]string{"not a repository": plain, "a .git file pointing elsewhere": foreign} {
		t.Run(name, func(t *testing.T) {
			ws := wsNew(t, dir, WorkspaceOptions{})
			got, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": "a.txt"})
			if err != nil || !strings.Contains(got, "DB_PASSWORD") {
				t.Errorf("read a.txt = %q, %v", got, err)
			}
			set, err := newGitCLI(ws, GitOptions{}).secrets(context.Background())
			if err != nil || !set.empty() {
				t.Errorf("secrets = %v, %v; want an empty set", set, err)
			}
		})
	}
}

// TestSecretBlobsAcrossWorktrees: each synced commit gets a worktree and a
// workspace of its own; the set they share grows with the new commits.
func TestSecretBlobsAcrossWorktrees(t *testing.T) {
	repo := secretHistoryFixture(t)
	first := wsNew(t, repo.dir, WorkspaceOptions{})
	if _, err := runGitTool(t, NewReadFile(first, Options{}), map[string]any{"path": "notes.txt"}); err != nil {
		t.Fatal(err)
	}
	histCommits(t, repo.dir, []histCommit{
		{who: alice, date: "2024-02-01T10:00:00+00:00", msg: "Add kubeconfig", write: map[string]string{"ops/prod.kubeconfig": "token: worktree-secret\n"}},
		{who: alice, date: "2024-02-02T10:00:00+00:00", msg: "Hide kubeconfig", rename: [2]string{"ops/prod.kubeconfig", "ops/cluster.txt"}},
	})
	tree := filepath.Join(t.TempDir(), "tree")
	histGit(t, repo.dir, nil, "worktree", "add", "-q", "--detach", tree, "HEAD")
	// As the repository manager opens the worktrees it made: their .git is
	// a file, so the git directory is named, not discovered.
	ws := wsNew(t, tree, WorkspaceOptions{GitDir: filepath.Join(repo.dir, ".git", "worktrees", "tree")})
	for _, c := range []struct {
		tool Tool
		args map[string]any
	}{
		{NewReadFile(ws, Options{}), map[string]any{"path": "ops/cluster.txt"}},
		{NewGitBlame(ws, Options{}), map[string]any{"path": "ops/cluster.txt"}},
	} {
		got, err := runGitTool(t, c.tool, c.args)
		if !errors.Is(err, ErrDenied) {
			t.Errorf("%s %v: %v, want ErrDenied; output:\n%s", c.tool.Definition().Name, c.args, err, got)
		}
	}
}

// TestSecretBlobsSubdirectoryCheckout: a checkout below the top of its
// repository refuses secrets renamed inside it, and secrets from outside
// it renamed in.
func TestSecretBlobsSubdirectoryCheckout(t *testing.T) {
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add secrets", write: map[string]string{
			"svc/.env": "INNER=inner-secret\n", ".env": "OUTER=outer-secret\n", "svc/main.go": "package main\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Hide inner", rename: [2]string{"svc/.env", "svc/inner.txt"}},
		{who: alice, date: "2024-01-12T10:00:00+00:00", msg: "Hide outer", rename: [2]string{".env", "svc/outer.txt"}},
	})
	ws := wsNew(t, filepath.Join(dir, "svc"), WorkspaceOptions{})
	for _, p := range []string{"inner.txt", "outer.txt"} {
		got, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": p})
		if !errors.Is(err, ErrDenied) {
			t.Errorf("read %s: %v, want ErrDenied; output:\n%s", p, err, got)
		}
		got, err = runGitTool(t, NewGitShow(ws, Options{}), map[string]any{"commit": "HEAD", "path": p})
		if err != nil || strings.Contains(got, "-secret") {
			t.Errorf("show %s: %v\n%s", p, err, got)
		}
	}
	if _, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": "main.go"}); err != nil {
		t.Errorf("read main.go: %v", err)
	}
}

// TestSecretBlobsCRLFCheckout: a secret checked out under a public name
// with CRLF line ends (the repository's .gitattributes asks for them) is
// not its blob byte for byte, and is refused all the same.
func TestSecretBlobsCRLFCheckout(t *testing.T) {
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add secret", write: map[string]string{
			".env": envSecretText, ".gitattributes": "*.txt text eol=crlf\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Hide it", rename: [2]string{".env", "hidden.txt"}},
	})
	if err := os.Remove(filepath.Join(dir, "hidden.txt")); err != nil {
		t.Fatal(err)
	}
	histGit(t, dir, nil, "checkout", "--", "hidden.txt")
	raw, err := os.ReadFile(filepath.Join(dir, "hidden.txt"))
	if err != nil || !strings.Contains(string(raw), "\r\n") {
		t.Fatalf("hidden.txt was not checked out with CRLF: %q, %v", raw, err)
	}
	ws := wsNew(t, dir, WorkspaceOptions{})
	got, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": "hidden.txt"})
	if !errors.Is(err, ErrDenied) {
		t.Errorf("read hidden.txt: %v, want ErrDenied; output:\n%s", err, got)
	}
	args := map[string]any{"pattern": "DB_PASSWORD"}
	got, err = runGitTool(t, NewSearchCode(ws, Options{}), args)
	assertNoSecret(t, args, got, err)
}

// TestSecretBlobsOddNames: names git reports raw (-z) that look like the
// records around them, a leading ":" or a newline, are still paths.
func TestSecretBlobsOddNames(t *testing.T) {
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add keys", write: map[string]string{
			":deploy.pem": "colon-key-secret\n", "\nnewline.key": "newline-key-secret\n", "a.txt": "public\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Hide them", write: map[string]string{
			"b.txt": "colon-key-secret\n", "c.txt": "newline-key-secret\n"}},
	})
	ws := wsNew(t, dir, WorkspaceOptions{})
	for _, p := range []string{"b.txt", "c.txt"} {
		got, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": p})
		if !errors.Is(err, ErrDenied) {
			t.Errorf("read %s: %v, want ErrDenied; output:\n%s", p, err, got)
		}
	}
}

// TestSecretBlobsTwoCheckoutsOfOneRepository: two checkouts at different
// places in one repository match an anchored pattern from different
// roots, so the first one's set must not serve the second.
func TestSecretBlobsTwoCheckoutsOfOneRepository(t *testing.T) {
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add", write: map[string]string{
			"a/config/key.txt": "A-secret\n", "b/config/key.txt": "B-secret\n", "a/x.go": "package x\n", "b/x.go": "package x\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Hide", rename: [2]string{"b/config/key.txt", "b/notes.txt"}},
	})
	opts := WorkspaceOptions{Deny: []string{"config/key.txt"}, NoDefaultDeny: true}
	wa := wsNew(t, filepath.Join(dir, "a"), opts)
	if _, err := runGitTool(t, NewReadFile(wa, Options{}), map[string]any{"path": "x.go"}); err != nil {
		t.Fatal(err)
	}
	wb := wsNew(t, filepath.Join(dir, "b"), opts)
	got, err := runGitTool(t, NewReadFile(wb, Options{}), map[string]any{"path": "notes.txt"})
	if !errors.Is(err, ErrDenied) {
		t.Errorf("b's notes.txt (its secret renamed) = %q, %v; want ErrDenied", got, err)
	}
}

// TestSecretBlobsGitUnavailableFailsClosed: when git cannot say what the
// checkout's repository is, for a reason that may pass (a timeout, an
// unreadable repository), the tools show no file content instead of
// serving the checkout as if it had no history, and ask again next time.
func TestSecretBlobsGitUnavailableFailsClosed(t *testing.T) {
	repo := secretHistoryFixture(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin := t.TempDir()
	marker := filepath.Join(bin, "failed-once")
	// The first look at the repository fails as a git that cannot read it
	// would; every later call is the real git.
	script := "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = --show-toplevel ] && [ ! -e '" + marker + "' ]; then\n    touch '" + marker + "'\n    echo 'fatal: unable to read index: Input/output error' >&2\n    exit 128\n  fi\ndone\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ws := wsNew(t, repo.dir, WorkspaceOptions{})
	got, err := runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": "docs/copy.txt"})
	if err == nil || strings.Contains(got, "DB_PASSWORD") {
		t.Fatalf("read_file while git could not read the repository = %q, %v; want no content", got, err)
	}
	got, err = runGitTool(t, NewReadFile(ws, Options{}), map[string]any{"path": "docs/copy.txt"})
	if !errors.Is(err, ErrDenied) {
		t.Errorf("read_file once git reads it again = %q, %v; want ErrDenied", got, err)
	}
}
