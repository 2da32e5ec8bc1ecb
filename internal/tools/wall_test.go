//go:build unix

package tools

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wallRegistry is every tool over ws behind one registry, as a turn has
// them.
func wallRegistry(ws *Workspace) *Registry {
	return NewRegistry(NewListFiles(ws, Options{}), NewGlob(ws, Options{}), NewSearchCode(ws, Options{}), NewReadFile(ws, Options{}),
		NewGitLog(ws, Options{}), NewGitShow(ws, Options{}), NewGitBlame(ws, Options{}))
}

// wallCall runs one call through r and returns what the model would read.
func wallCall(t *testing.T, r *Registry, name string, args map[string]any) string {
	t.Helper()
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return r.Run(t.Context(), Call{ID: "c", Name: name, Input: in}).Content
}

// A repository can replace any object with another (refs/replace/, or
// core.useReplaceRefs turning that back on): a public file's blob
// replaced by a secret one keeps its public id in every tree, so the
// secret-blob check passes it, while git prints the replacement. The
// tools read objects as they are stored.
func TestReplacedObjectsShowAsStored(t *testing.T) {
	const secret = "API_KEY=replaced-secret\n"
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	sha := histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add env", write: map[string]string{".env": secret}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Remove env", remove: []string{".env"}},
		{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Add readme", write: map[string]string{"README.md": "hello\n"}},
	})
	envBlob := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", sha["Add env"]+":.env"))
	readmeBlob := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", "HEAD:README.md"))
	histGit(t, dir, nil, "replace", readmeBlob, envBlob)
	// Explicitly on, which the environment variable alone does not beat.
	histGit(t, dir, nil, "config", "core.useReplaceRefs", "true")
	// And the deprecated way of rewriting parents: "Add readme" as a
	// root commit would hide the history before it.
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "grafts"), []byte(sha["Add readme"]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{GitShowName, map[string]any{"commit": "HEAD", "path": "README.md"}},
		{GitBlameName, map[string]any{"path": "README.md"}},
		{GitBlameName, map[string]any{"path": "README.md", "commit": "HEAD"}},
		{GitLogName, map[string]any{"pickaxe": "replaced-secret"}},
	} {
		out := wallCall(t, r, c.name, c.args)
		// git_log repeats the pickaxe it was given; a commit listed is
		// what would confirm the text.
		leaked := strings.Contains(out, "replaced-secret")
		if c.name == GitLogName {
			leaked = !strings.HasPrefix(out, "no commits")
		}
		if leaked {
			t.Errorf("%s %v shows or confirms the secret a replace ref put in README.md:\n%s", c.name, c.args, out)
		}
		if c.name != GitLogName && !strings.Contains(out, "hello") {
			t.Errorf("%s %v does not show README.md as stored:\n%s", c.name, c.args, out)
		}
	}
	if out := wallCall(t, r, GitLogName, map[string]any{}); !strings.HasPrefix(out, "3 commits") {
		t.Errorf("git_log follows info/grafts instead of the stored parents:\n%s", out)
	}
}

// git_show's diffstat names no denied file and counts none of a secret's
// lines: ".env | 12 ++--" would tell that a secret changed and by how
// much, which a citation of .env is careful not to. A file whose content
// is a secret's is left out too. Renames between public files that had to
// be split for a secret pair beside them say so.
func TestGitShowStatLeavesSecretsOut(t *testing.T) {
	const secret = "A=1\nB=2\nTOKEN=stat-secret\n"
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	sha := histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add files", write: map[string]string{
			"a.txt": "one\ntwo\nthree\n", ".env": secret, "config/app.yaml": "port: 1\n"}},
		{who: bob, date: "2024-01-11T10:00:00+00:00", msg: "Change the env", write: map[string]string{
			".env": secret + "MORE=1\nMORE=2\n", "config/app.yaml": "port: 2\n"}},
		{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Move things", rename: [2]string{"a.txt", "b.txt"}},
	})
	histGit(t, dir, nil, "mv", ".env", "c.txt")
	sha["Hide the env"] = histCommits(t, dir, []histCommit{
		{who: bob, date: "2024-01-13T10:00:00+00:00", msg: "Hide the env", rename: [2]string{"b.txt", "d.txt"}},
	})["Hide the env"]

	r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
	for _, c := range []struct {
		commit, path string
		contains     []string
	}{
		{sha["Change the env"], "", []string{"\n\n config/app.yaml | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"}},
		{sha["Change the env"], "config", []string{"+port: 2\n"}},
		{sha["Hide the env"], "", []string{" b.txt | 3 ---\n d.txt | 3 +++\n 2 files changed, 3 insertions(+), 3 deletions(-)\n",
			"[renames in this commit are listed as a deletion and an addition]\n"}},
		{sha["Hide the env"], "c.txt", []string{"[not shown, their content was once in a secret file: c.txt]\n"}},
	} {
		args := map[string]any{"commit": c.commit}
		if c.path != "" {
			args["path"] = c.path
		}
		out := wallCall(t, r, GitShowName, args)
		for _, want := range c.contains {
			if !strings.Contains(out, want) {
				t.Errorf("git_show %v lacks %q:\n%s", args, want, out)
			}
		}
		for _, leak := range []string{".env", "stat-secret", "MORE=", "c.txt |"} {
			if strings.Contains(out, leak) {
				t.Errorf("git_show %v tells %q:\n%s", args, leak, out)
			}
		}
	}
}

// A commit that moves a submodule is shown as the two commit ids. A
// repository's diff.submodule=log or diff would have git read the
// submodule's repository, wherever its .git file points on the host, and
// print its commit messages or its files, none of which are the
// checkout's, nor checked against its deny-list.
func TestGitShowSubmoduleStaysShort(t *testing.T) {
	other := t.TempDir()
	histGit(t, other, nil, "init", "-q")
	osha := histCommits(t, other, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Other start", write: map[string]string{"x.txt": "x\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Other repository subject", write: map[string]string{".env": "TOKEN=submodule-secret\n", "y.txt": "other-file-text\n"}},
	})
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Start", write: map[string]string{"README.md": "main\n"}}})
	histGit(t, dir, nil, "update-index", "--add", "--cacheinfo", "160000,"+osha["Other start"]+",sub")
	who := []string{"GIT_AUTHOR_NAME=Bob", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=Bob", "GIT_COMMITTER_EMAIL=b@example.com"}
	histGit(t, dir, who, "commit", "-q", "-m", "Add sub")
	histGit(t, dir, nil, "update-index", "--cacheinfo", "160000,"+osha["Other repository subject"]+",sub")
	histGit(t, dir, who, "commit", "-q", "-m", "Bump sub")
	wsWriteFiles(t, dir, map[string]string{"sub/.git": "gitdir: " + filepath.Join(other, ".git") + "\n"})

	for _, mode := range []string{"log", "diff"} {
		histGit(t, dir, nil, "config", "diff.submodule", mode)
		r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
		out := wallCall(t, r, GitShowName, map[string]any{"commit": "HEAD", "path": "sub"})
		if !strings.Contains(out, "+Subproject commit "+osha["Other repository subject"]) {
			t.Errorf("diff.submodule=%s: git_show does not show the submodule's new commit id:\n%s", mode, out)
		}
		for _, leak := range []string{"Other repository subject", "other-file-text", "submodule-secret"} {
			if strings.Contains(out, leak) {
				t.Errorf("diff.submodule=%s: git_show prints %q from the submodule's repository:\n%s", mode, leak, out)
			}
		}
	}
}

// The history of a directory leaves out commits whose only change in it
// was to a secret file: listing one would tell when the secret changed.
func TestGitLogDirectoryLeavesSecretOnlyCommitsOut(t *testing.T) {
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add config", write: map[string]string{"config/app.yaml": "port: 1\n", "config/.env.prod": "P=1\n"}},
		{who: bob, date: "2024-01-11T10:00:00+00:00", msg: "Rotate the password", write: map[string]string{"config/.env.prod": "P=2\n"}},
		{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Change the port", write: map[string]string{"config/app.yaml": "port: 2\n"}},
	})
	r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
	out := wallCall(t, r, GitLogName, map[string]any{"path": "config"})
	if !strings.HasPrefix(out, "2 commits") || strings.Contains(out, "Rotate the password") {
		t.Errorf("git_log of config lists a commit that changed only a secret file in it:\n%s", out)
	}
	// The whole history is every commit: it names no file.
	if out := wallCall(t, r, GitLogName, map[string]any{}); !strings.HasPrefix(out, "3 commits") {
		t.Errorf("git_log of the whole repository:\n%s", out)
	}
}

// A secret's blob checked out under a public name through a conversion
// (here working-tree-encoding=UTF-7 in .gitattributes) is written as bytes
// that hash to no secret blob, yet read as the secret: the index says
// which blob the file came from, and that is refused too.
func TestConvertedSecretCheckoutRefused(t *testing.T) {
	const secret = "API_KEY=converted-secret\n"
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	sha := histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add env", write: map[string]string{".env": secret, "README.md": "readme\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Remove env", remove: []string{".env"}},
	})
	blob := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", sha["Add env"]+":.env"))
	wsWriteFiles(t, dir, map[string]string{".gitattributes": "notes.txt working-tree-encoding=UTF-7\n"})
	histGit(t, dir, nil, "add", ".gitattributes")
	histGit(t, dir, nil, "update-index", "--add", "--cacheinfo", "100644,"+blob+",notes.txt")
	histGit(t, dir, []string{"GIT_AUTHOR_NAME=Bob", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=Bob", "GIT_COMMITTER_EMAIL=b@example.com"},
		"commit", "-q", "-m", "Add notes")
	histGit(t, dir, nil, "checkout", "--", "notes.txt")
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) == secret || !strings.Contains(string(b), "converted-secret") {
		t.Fatalf("notes.txt on disk = %q, %v; want the secret converted", b, err)
	}
	wsSymlink(t, "notes.txt", filepath.Join(dir, "link.txt"))

	r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{ReadFileName, map[string]any{"path": "notes.txt"}},
		{ReadFileName, map[string]any{"path": "./notes.txt"}},
		{ReadFileName, map[string]any{"path": "link.txt"}},
		{SearchCodeName, map[string]any{"pattern": "converted"}},
		{SearchCodeName, map[string]any{"pattern": "converted", "path": "link.txt"}},
	} {
		if out := wallCall(t, r, c.name, c.args); strings.Contains(out, "converted-secret") || strings.Contains(out, "1 match") {
			t.Errorf("%s %v shows the converted secret:\n%s", c.name, c.args, out)
		}
	}
	if out := wallCall(t, r, ReadFileName, map[string]any{"path": "README.md"}); !strings.Contains(out, "readme") {
		t.Errorf("read_file README.md:\n%s", out)
	}
}

// The history of a file followed across renames stops where it was a
// secret file: the commits that changed it as .env would tell when the
// secret changed.
func TestGitLogFollowStopsAtSecretNames(t *testing.T) {
	const lines = "APP=shop\nPORT=8080\nHOST=localhost\nMODE=prod\nLOG=info\n"
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add env", write: map[string]string{".env": lines + "PW=one-secret\n"}},
		{who: bob, date: "2024-01-11T10:00:00+00:00", msg: "Rotate the password", write: map[string]string{".env": lines + "PW=two-secret\n"}},
		{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Turn env into a sample", rename: [2]string{".env", "env.sample"}},
		{who: carol, date: "2024-01-13T10:00:00+00:00", msg: "Blank the sample", write: map[string]string{"env.sample": lines + "PW=CHANGEME\n"}},
	})
	r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
	out := wallCall(t, r, GitLogName, map[string]any{"path": "env.sample"})
	for _, want := range []string{"Blank the sample"} {
		if !strings.Contains(out, want) {
			t.Errorf("git_log env.sample lacks %q:\n%s", want, out)
		}
	}
	// "Turn env into a sample" kept the secret's blob under the new
	// name, so it goes too.
	for _, leak := range []string{"Rotate the password", "Add env", "Turn env into a sample"} {
		if strings.Contains(out, leak) {
			t.Errorf("git_log env.sample lists %q, a commit of the secret file:\n%s", leak, out)
		}
	}
}

// writeLinesBlob writes a blob of size bytes of "a\n" lines into the
// repository at dir as a loose object, without a file of that size
// anywhere, and returns its id: a few hundred KB on disk for any size.
func writeLinesBlob(t *testing.T, dir string, size int64) string {
	t.Helper()
	h := sha1.New()
	var z bytes.Buffer
	zw, err := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	w := io.MultiWriter(h, zw)
	fmt.Fprintf(w, "blob %d\x00", size)
	if _, err := io.CopyN(w, linesReader{}, size); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("%x", h.Sum(nil))
	p := filepath.Join(dir, ".git", "objects", id[:2], id[2:])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	return id
}

type linesReader struct{}

func (linesReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "a\n"[i%2]
	}
	return len(p), nil
}

// A blob of repeated lines compresses a thousandfold: a repository of a few
// hundred KB can hold one that git would inflate whole into memory to
// diff, blame or search it. git is stopped at its allocation limit, and
// the tools say so.
func TestBlobBombStopsGit(t *testing.T) {
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histCommits(t, dir, []histCommit{{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Start", write: map[string]string{"README.md": "hi\n"}}})
	bomb := writeLinesBlob(t, dir, 256<<20+2)
	readme := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", "HEAD:README.md"))
	tree := strings.TrimSpace(histGitIn(t, dir, "100644 blob "+readme+"\tREADME.md\n100644 blob "+bomb+"\tbig.bin\n", "mktree"))
	who := []string{"GIT_AUTHOR_NAME=Bob", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=Bob", "GIT_COMMITTER_EMAIL=b@example.com"}
	commit := strings.TrimSpace(histGit(t, dir, who, "commit-tree", "-p", "HEAD", "-m", "Add a bomb", tree))
	histGit(t, dir, nil, "update-ref", "HEAD", commit)

	r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{GitShowName, map[string]any{"commit": "HEAD", "path": "big.bin"}},
		{GitBlameName, map[string]any{"path": "big.bin"}},
		{GitLogName, map[string]any{"pickaxe": "needle"}},
	} {
		in, err := json.Marshal(c.args)
		if err != nil {
			t.Fatal(err)
		}
		res := r.Run(t.Context(), Call{ID: "c", Name: c.name, Input: in})
		if !res.IsError || !strings.Contains(res.Content, "larger than the 256 MB git may load") {
			t.Errorf("%s %s = %q; want git stopped at its allocation limit", c.name, in, res.Content)
		}
	}
	// The rest of the history is still there.
	if out := wallCall(t, r, GitShowName, map[string]any{"commit": "HEAD~1", "path": "README.md"}); !strings.Contains(out, "+hi\n") {
		t.Errorf("git_show HEAD~1:\n%s", out)
	}
}

// A list of refs too long to read whole leaves the secret-blob set
// unknown rather than partial: the refs left out may be the only ones
// that reach the commit where a secret was at its denied path.
func TestTooManyRefsLeavesSecretsUnknown(t *testing.T) {
	old := refsOutputLimit
	refsOutputLimit = 4 << 10
	t.Cleanup(func() { refsOutputLimit = old })

	const secret = "API_KEY=many-refs-secret\n"
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	sha := histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Start", write: map[string]string{"README.md": "hi\n"}},
	})
	// The secret's commit is reached by a ref that sorts last.
	histGit(t, dir, nil, "checkout", "-q", "-b", "side")
	side := histCommits(t, dir, []histCommit{{who: bob, date: "2024-01-11T10:00:00+00:00", msg: "Add env", write: map[string]string{".env": secret}}})
	histGit(t, dir, nil, "checkout", "-q", "main")
	histGit(t, dir, nil, "update-ref", "refs/zzz/last", side["Add env"])
	histGit(t, dir, nil, "branch", "-q", "-D", "side")
	// 200 tags of 200 commits: git lists each commit once.
	var refs strings.Builder
	for i := range 200 {
		fmt.Fprintf(&refs, "commit refs/tags/t%04d\ncommitter A <a@example.com> %d +0000\ndata 4\ntag\nfrom %s\n\n", i, 1700000000+i, sha["Start"])
	}
	histGitIn(t, dir, refs.String(), "fast-import", "--quiet")
	// main gets the secret under a public name.
	wsWriteFiles(t, dir, map[string]string{"notes.txt": secret})
	histGit(t, dir, nil, "add", "notes.txt")
	histGit(t, dir, []string{"GIT_AUTHOR_NAME=Bob", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=Bob", "GIT_COMMITTER_EMAIL=b@example.com"}, "commit", "-q", "-m", "Add notes")
	histGit(t, dir, nil, "reflog", "expire", "--expire=now", "--all")

	r := wallRegistry(wsNew(t, dir, WorkspaceOptions{}))
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{GitShowName, map[string]any{"commit": "HEAD", "path": "notes.txt"}},
		{GitBlameName, map[string]any{"path": "notes.txt"}},
		{ReadFileName, map[string]any{"path": "notes.txt"}},
	} {
		if out := wallCall(t, r, c.name, c.args); strings.Contains(out, "many-refs-secret") {
			t.Errorf("%s %v shows the secret:\n%s", c.name, c.args, out)
		}
	}
}

// A commondir file written into a checkout's .git after it was opened
// points git at another repository's refs and objects: the check before
// every call turns git off instead.
func TestCommondirAddedLaterRefused(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	histGit(t, a, nil, "init", "-q")
	histCommits(t, a, []histCommit{{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "mine", write: map[string]string{"a.go": "package a\n"}}})
	histGit(t, b, nil, "init", "-q")
	histCommits(t, b, []histCommit{{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "OTHER-REPO-HISTORY", write: map[string]string{"b.go": "package b\n"}}})
	ws := wsNew(t, a, WorkspaceOptions{})
	if out, err := runGitTool(t, NewGitLog(ws, Options{}), map[string]any{}); err != nil || !strings.Contains(out, "mine") {
		t.Fatalf("git_log before = %q, %v", out, err)
	}
	if err := os.WriteFile(filepath.Join(a, ".git", "commondir"), []byte(filepath.Join(b, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runGitTool(t, NewGitLog(ws, Options{}), map[string]any{})
	if strings.Contains(out, "OTHER-REPO") || !errors.Is(err, ErrForeignGitDir) {
		t.Errorf("git_log after a commondir was planted = %q, %v; want ErrForeignGitDir", out, err)
	}
}
