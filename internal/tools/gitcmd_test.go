package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
)

// histRepo is a git repository with a known history: fixed authors and
// dates make every sha the same on every run.
type histRepo struct {
	dir string
	sha map[string]string // subject -> full sha
}

// short is the 8-character sha the tools print for a commit subject.
func (r histRepo) short(t testing.TB, subject string) string {
	t.Helper()
	s, ok := r.sha[subject]
	if !ok {
		t.Fatalf("no commit %q in the fixture", subject)
	}
	return s[:8]
}

// histGit runs a fixture's git command with extra environment (see
// gitexectest.Run) and returns its output.
func histGit(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	return gitexectest.Run(t, dir, gitexectest.Opts{Env: env}, args...)
}

// histGitIn is histGit with stdin instead of extra environment.
func histGitIn(t testing.TB, dir, stdin string, args ...string) string {
	t.Helper()
	return gitexectest.Run(t, dir, gitexectest.Opts{Stdin: stdin}, args...)
}

// histCommit is a gitexectest.Commit in the short form the history
// tables here use; every file, ignored or not, is committed.
type histCommit struct {
	who, date, msg string
	write          map[string]string
	remove         []string
	rename         [2]string
}

var (
	alice = "Alice Example <alice@example.com>"
	bob   = "Bob Builder <bob@example.com>"
	carol = "Carol Coder <carol@example.com>"
)

// parserV1 is the file the history starts from; the fixture renames it
// and later changes line 5.
const parserV1 = "package lexer\n\n// Lex splits src into tokens.\nfunc Lex(src string) []string {\n\tvar out []string\n\tfor _, f := range split(src) {\n\t\tout = append(out, f)\n\t}\n\treturn out\n}\n"

func bigTable() string {
	var b strings.Builder
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&b, "row %04d\n", i)
	}
	return b.String()
}

// histFixture builds the repository most git tool tests use:
//
//	Add parser                (Alice, 2024-01-10) parser.go, README.md, config/app.yaml
//	Add settings              (Bob,   2024-01-20) .env, config/.env.prod, config/app.yaml
//	Remove the env file       (Alice, 2024-02-05) -.env
//	Rename parser to lexer    (Carol, 2024-02-15) parser.go -> lexer.go
//	Guard against empty input (Bob,   2024-03-01) lexer.go line 5, notes.txt
//	Add generated table       (Alice, 2024-03-10) table.txt (1000 lines)
func histFixture(t testing.TB) histRepo {
	t.Helper()
	return newHist(t, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add parser", write: map[string]string{
			"parser.go": parserV1, "README.md": "# lexer\n", "config/app.yaml": "port: 8080\n"}},
		{who: bob, date: "2024-01-20T10:00:00+00:00", msg: "Add settings", write: map[string]string{
			".env": "API_TOKEN=hunter2-secret\n", "config/.env.prod": "DB_PASSWORD=swordfish\n", "config/app.yaml": "port: 9090\n"}},
		{who: alice, date: "2024-02-05T10:00:00+00:00", msg: "Remove the env file", remove: []string{".env"}},
		{who: carol, date: "2024-02-15T10:00:00+00:00", msg: "Rename parser to lexer", rename: [2]string{"parser.go", "lexer.go"}},
		{who: bob, date: "2024-03-01T23:30:00-05:00", msg: "Guard against empty input\n\nThe lexer crashed on an empty file.\nSeen in production.",
			write: map[string]string{"lexer.go": strings.Replace(parserV1, "\tvar out []string\n", "\tif emptyInputGuard(src) {\n\t\treturn nil\n\t}\n\tvar out []string\n", 1),
				"notes.txt": "remember the guard\n"}},
		{who: alice, date: "2024-03-10T10:00:00+00:00", msg: "Add generated table", write: map[string]string{"table.txt": bigTable()}},
	})
}

// Contents of secretRenameFixture. envSecret and stagingSecret hold the
// values no tool may ever give away; each public file is most of a secret
// one, so git pairs them as a rename.
var (
	envLines      = "APP_NAME=shop\nAPP_PORT=8080\nAPP_HOST=localhost\nAPP_MODE=prod\nAPP_LOG=info\n"
	envSecret     = envLines + "DB_PASSWORD=hunter2-very-secret\n"
	envSample     = envLines + "DB_PASSWORD=CHANGEME\n"
	envLocal      = envLines + "DB_PASSWORD=tiger-local-secret\n"
	stagingShared = "KEY_1=one\nKEY_2=two\nKEY_3=three\nKEY_4=four\nKEY_5=five\nKEY_6=six\nKEY_7=seven\nKEY_8=eight\n"
	stagingSecret = stagingShared + "PW=staging-secret-tiger\n"
	draftNotes    = stagingShared + "NOTE=draft\nEXTRA=1\n"
	defaultsText  = draftNotes + "PW=CHANGEME\n"
	templateText  = stagingShared + "NOTE=template\n"
	devSecret     = stagingShared + "PW=dev-secret-lynx\n"
)

// secretRenameFixture builds a history in which secret files turn into
// public ones and back, the way a repository ends up with an env.sample:
//
//	Add env                        config/.env, config/.env.staging, config/.env.prod, config/app.yaml, notes/draft.txt
//	Turn env into a sample         config/.env -> config/env.sample, the password blanked
//	Rename app config              config/app.yaml -> config/settings.yaml (no secret involved)
//	Promote sample to local secret config/env.sample -> config/.env.local, a password set
//	Split defaults out             -notes/draft.txt, -config/.env.staging, +config/defaults.txt
//	Move template out              config/template.txt -> other/template.txt, +config/.env.dev
//	Rotate prod password           config/.env.prod only
//
// In "Split defaults out" config/defaults.txt is closest to
// notes/draft.txt, so the whole commit pairs those two; limited to config/
// git pairs it with config/.env.staging instead. In "Move template out"
// the whole commit pairs the two templates; limited to config/ git pairs
// config/template.txt with config/.env.dev.
func secretRenameFixture(t testing.TB) histRepo {
	t.Helper()
	return newHist(t, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add env", write: map[string]string{
			"config/.env": envSecret, "config/.env.staging": stagingSecret, "config/.env.prod": "PW=prod-one\n",
			"config/app.yaml": "port: 8080\nhost: localhost\n", "notes/draft.txt": draftNotes, "config/template.txt": templateText}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Turn env into a sample",
			remove: []string{"config/.env"}, write: map[string]string{"config/env.sample": envSample}},
		{who: bob, date: "2024-01-12T10:00:00+00:00", msg: "Rename app config", rename: [2]string{"config/app.yaml", "config/settings.yaml"}},
		{who: bob, date: "2024-01-13T10:00:00+00:00", msg: "Promote sample to local secret",
			remove: []string{"config/env.sample"}, write: map[string]string{"config/.env.local": envLocal}},
		{who: carol, date: "2024-01-14T10:00:00+00:00", msg: "Split defaults out",
			remove: []string{"notes/draft.txt", "config/.env.staging"}, write: map[string]string{"config/defaults.txt": defaultsText}},
		{who: carol, date: "2024-01-15T10:00:00+00:00", msg: "Move template out", remove: []string{"config/template.txt"},
			write: map[string]string{"other/template.txt": templateText, "config/.env.dev": devSecret}},
		{who: carol, date: "2024-01-16T10:00:00+00:00", msg: "Rotate prod password", write: map[string]string{"config/.env.prod": "PW=prod-two\n"}},
	})
}

// newHist is a new repository with commits.
func newHist(t testing.TB, commits []histCommit) histRepo {
	t.Helper()
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	return histRepo{dir: dir, sha: histCommits(t, dir, commits)}
}

// histCommits makes the commits in order and returns subject -> sha.
func histCommits(t testing.TB, dir string, commits []histCommit) map[string]string {
	t.Helper()
	repo := gitexectest.Open(t, dir)
	shas := map[string]string{}
	for _, c := range commits {
		subject, _, _ := strings.Cut(c.msg, "\n")
		shas[subject] = repo.Commit(gitexectest.Commit{Message: c.msg, Author: c.who, Date: c.date,
			Write: c.write, Remove: c.remove, Rename: c.rename, Force: true})
	}
	return shas
}

// runGitTool calls a tool with args marshalled to JSON.
func runGitTool(t testing.TB, tool Tool, args any) (string, error) {
	t.Helper()
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return runText(context.Background(), tool, in)
}

// gitTools builds all three tools over one workspace.
func gitTools(t testing.TB, dir string, opts GitOptions) (Tool, Tool, Tool) {
	t.Helper()
	ws := wsNew(t, dir, WorkspaceOptions{})
	o := Options{Git: opts}
	return NewGitLog(ws, o), NewGitShow(ws, o), NewGitBlame(ws, o)
}

// writeScript writes an executable shell script.
func writeScript(t testing.TB, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// filesBelow returns every file below dir, for asserting nothing appeared.
func filesBelow(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestGitOptionInjectionRefused(t *testing.T) {
	repo := histFixture(t)
	marks := t.TempDir()
	gitLog, gitShow, gitBlame := gitTools(t, repo.dir, GitOptions{})
	before := filesBelow(t, repo.dir)
	out := filepath.Join(marks, "x")
	pwn := "touch " + filepath.Join(marks, "pwned")

	tests := []struct {
		name    string
		tool    Tool
		args    map[string]any
		wantErr string // substring of the error; "" means it must run cleanly
		wantOut string // substring of the output
	}{
		{name: "log path that looks like --output", tool: gitLog, args: map[string]any{"path": "--output=" + out}, wantOut: "no commits"},
		{name: "log path -p", tool: gitLog, args: map[string]any{"path": "-p"}, wantOut: "no commits"},
		{name: "log pathspec magic is a plain name", tool: gitLog, args: map[string]any{"path": ":(top)README.md"}, wantOut: "no commits"},
		{name: "log author --exec is an author string", tool: gitLog, args: map[string]any{"author": "--exec=" + pwn}, wantOut: "no commits"},
		{name: "log grep --output is message text", tool: gitLog, args: map[string]any{"grep": "--output=" + out}, wantOut: "no commits"},
		{name: "log pickaxe --output is code text", tool: gitLog, args: map[string]any{"pickaxe": "--output=" + out}, wantOut: "no commits"},
		{name: "log since with an option", tool: gitLog, args: map[string]any{"since": "--output=" + out}, wantErr: "not a date"},
		{name: "show commit -c core.pager", tool: gitShow, args: map[string]any{"commit": "-c core.pager=sh -c '" + pwn + "'"}, wantErr: "would read as an option"},
		{name: "show commit --help", tool: gitShow, args: map[string]any{"commit": "--help"}, wantErr: "would read as an option"},
		{name: "show commit with a second argument", tool: gitShow, args: map[string]any{"commit": "HEAD --output=" + out}, wantErr: "has characters no commit name has"},
		{name: "show commit --output", tool: gitShow, args: map[string]any{"commit": "--output=" + out}, wantErr: "would read as an option"},
		{name: "show range refused", tool: gitShow, args: map[string]any{"commit": "HEAD~2..HEAD"}, wantErr: "ranges are not supported"},
		{name: "show tree path refused", tool: gitShow, args: map[string]any{"commit": "HEAD:README.md"}, wantErr: `contains ":"`},
		{name: "show path --output", tool: gitShow, args: map[string]any{"commit": "HEAD", "path": "--output=" + out}, wantOut: "is not changed in commit"},
		{name: "blame path --output", tool: gitBlame, args: map[string]any{"path": "--output=" + out}, wantErr: "does not exist at HEAD"},
		{name: "blame path -p", tool: gitBlame, args: map[string]any{"path": "-p"}, wantErr: "does not exist at HEAD"},
		{name: "blame commit --help", tool: gitBlame, args: map[string]any{"path": "README.md", "commit": "--help"}, wantErr: "would read as an option"},
		{name: "blame path with a newline", tool: gitBlame, args: map[string]any{"path": "README.md\nHEAD:.env"}, wantErr: "control character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runGitTool(t, tc.tool, tc.args)
			switch {
			case tc.wantErr != "" && err == nil:
				t.Fatalf("no error; output:\n%s", got)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error = %q, want it to contain %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error = %v", err)
			case !strings.Contains(got, tc.wantOut):
				t.Fatalf("output does not contain %q:\n%s", tc.wantOut, got)
			}
			if files := filesBelow(t, marks); len(files) != 0 {
				t.Fatalf("files appeared in the marker directory: %v", files)
			}
			if after := filesBelow(t, repo.dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Fatalf("files in the checkout changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// TestGitRepoConfigNeverRunsPrograms plants every kind of program a
// repository's config can name and checks that git really would run them
// without the tools' overrides, then that the tools run none.
func TestGitRepoConfigNeverRunsPrograms(t *testing.T) {
	marks := t.TempDir()
	dir := newHist(t, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add notes", write: map[string]string{
			".gitattributes": "*.txt diff=evil filter=evil\n", "notes.txt": "one\ntwo\n", "main.go": "package main\n"}},
		{who: bob, date: "2024-01-11T10:00:00+00:00", msg: "Edit notes", write: map[string]string{"notes.txt": "one\nthree\n", "main.go": "package main\n\nfunc main() {}\n"}},
	}).dir
	// A signed commit on top, so log.showSignature has a signature to
	// verify with gpg.program.
	tree := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", "HEAD^{tree}"))
	parent := strings.TrimSpace(histGit(t, dir, nil, "rev-parse", "HEAD"))
	raw := "tree " + tree + "\nparent " + parent +
		"\nauthor Alice Example <alice@example.com> 1705000000 +0000\ncommitter Alice Example <alice@example.com> 1705000000 +0000\n" +
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nSigned commit\n"
	wsWriteFiles(t, marks, map[string]string{"commit.txt": raw})
	signed := strings.TrimSpace(histGit(t, dir, nil, "hash-object", "-t", "commit", "-w", filepath.Join(marks, "commit.txt")))
	histGit(t, dir, nil, "update-ref", "HEAD", signed)
	if err := os.Remove(filepath.Join(marks, "commit.txt")); err != nil {
		t.Fatal(err)
	}

	bin := t.TempDir()
	var cfg strings.Builder
	for _, name := range []string{"pager", "external", "textconv", "command", "gpg", "fsmonitor", "clean", "smudge", "ssh"} {
		writeScript(t, filepath.Join(bin, name), fmt.Sprintf(`touch %q
case %q in
textconv) cat "$1" ;;
clean|smudge) cat ;;
esac
`, filepath.Join(marks, name), name))
	}
	fmt.Fprintf(&cfg, "[core]\n\tpager = %s\n\tfsmonitor = %s\n\tsshCommand = %s\n", filepath.Join(bin, "pager"), filepath.Join(bin, "fsmonitor"), filepath.Join(bin, "ssh"))
	fmt.Fprintf(&cfg, "[diff]\n\texternal = %s\n", filepath.Join(bin, "external"))
	fmt.Fprintf(&cfg, "[diff \"evil\"]\n\ttextconv = %s\n\tcommand = %s\n", filepath.Join(bin, "textconv"), filepath.Join(bin, "command"))
	fmt.Fprintf(&cfg, "[filter \"evil\"]\n\tclean = %s\n\tsmudge = %s\n", filepath.Join(bin, "clean"), filepath.Join(bin, "smudge"))
	fmt.Fprintf(&cfg, "[log]\n\tshowSignature = true\n[gpg]\n\tprogram = %s\n", filepath.Join(bin, "gpg"))
	fmt.Fprintf(&cfg, "[blame]\n\tignoreRevsFile = /etc/hostname\n")
	f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(cfg.String()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The service's own environment may point git elsewhere too.
	t.Setenv("GIT_EXTERNAL_DIFF", filepath.Join(bin, "external"))
	t.Setenv("GIT_DIR", filepath.Join(marks, "no-such-git-dir"))

	// Without the overrides, these plain commands run the planted
	// programs: the test would catch a tool that let them through.
	plain := func(args ...string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_DIR=.git", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		return cmd.Run()
	}
	plain("log", "-1")
	plain("show", "HEAD~1", "--", "notes.txt")
	plain("diff", "HEAD~2", "HEAD~1")
	// Even without textconv, blaming the working tree runs the clean
	// filter: the reason git_blame blames a commit.
	plain("blame", "--no-ignore-revs-file", "--no-textconv", "notes.txt")
	if err := plain("blame", "HEAD", "--", "main.go"); err == nil {
		t.Fatal("plain git blame read the planted ignore-revs file without failing, so this test proves nothing")
	}
	for _, name := range []string{"gpg", "textconv", "external", "command", "clean"} {
		if _, err := os.Stat(filepath.Join(marks, name)); err != nil {
			t.Fatalf("the planted %s program did not run under plain git, so this test proves nothing: %v", name, err)
		}
	}
	for _, f := range filesBelow(t, marks) {
		os.Remove(filepath.Join(marks, f))
	}

	gitLog, gitShow, gitBlame := gitTools(t, dir, GitOptions{})
	calls := []struct {
		tool Tool
		args map[string]any
		want string
	}{
		{gitLog, map[string]any{}, "Signed commit"},
		{gitLog, map[string]any{"pickaxe": "three"}, "Edit notes"},
		{gitLog, map[string]any{"path": "notes.txt"}, "Edit notes"},
		{gitShow, map[string]any{"commit": "HEAD~1", "path": "notes.txt"}, "+three"},
		{gitShow, map[string]any{"commit": "HEAD"}, "Signed commit"},
		{gitBlame, map[string]any{"path": "notes.txt"}, "2\t"},
	}
	for _, c := range calls {
		out, err := runGitTool(t, c.tool, c.args)
		if err != nil {
			t.Fatalf("%s %v: %v", c.tool.Definition().Name, c.args, err)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%s %v: output does not contain %q:\n%s", c.tool.Definition().Name, c.args, c.want, out)
		}
	}
	if got := filesBelow(t, marks); len(got) != 0 {
		t.Fatalf("programs from the repository's config ran: %v", got)
	}
}

func TestGitNotARepository(t *testing.T) {
	dir := t.TempDir()
	wsWriteFiles(t, dir, map[string]string{"main.go": "package main\n"})
	gitLog, gitShow, gitBlame := gitTools(t, dir, GitOptions{})
	for _, c := range []struct {
		tool Tool
		args map[string]any
	}{
		{gitLog, map[string]any{}},
		{gitShow, map[string]any{"commit": "HEAD"}},
		{gitBlame, map[string]any{"path": "main.go"}},
	} {
		_, err := runGitTool(t, c.tool, c.args)
		if !errors.Is(err, ErrNotGitRepo) {
			t.Errorf("%s: error = %v, want ErrNotGitRepo", c.tool.Definition().Name, err)
		}
	}
	res := NewRegistry(gitLog).Run(context.Background(), Call{ID: "1", Name: GitLogName})
	if !res.IsError || !strings.Contains(res.Content, "not a git repository; git history is not available") {
		t.Errorf("registry result = %+v", res)
	}
}

func TestGitNotInstalled(t *testing.T) {
	repo := histFixture(t)
	gitLog, _, _ := gitTools(t, repo.dir, GitOptions{Binary: "no-such-git-binary"})
	_, err := runGitTool(t, gitLog, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "git is not installed on the server") {
		t.Errorf("error = %v, want one saying git is missing", err)
	}
}

func TestGitTimeoutKillsGit(t *testing.T) {
	repo := histFixture(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	// A git whose log hangs; every other command is the real one.
	slow := writeScript(t, filepath.Join(t.TempDir(), "git"), fmt.Sprintf(`for a in "$@"; do [ "$a" = log ] && exec sleep 60; done
exec %q "$@"
`, real))
	gitLog, _, _ := gitTools(t, repo.dir, GitOptions{Binary: slow, Timeout: 300 * time.Millisecond})
	start := time.Now()
	// A grep, not a pickaxe: a pickaxe first lists the history's secret
	// blobs, with a git log of its own (TestSecretBlobsFailClosed).
	_, err = runGitTool(t, gitLog, map[string]any{"grep": "x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want a deadline", err)
	}
	if !strings.Contains(err.Error(), "narrow the request") {
		t.Errorf("error = %q, want a hint to narrow", err)
	}
	// Generous: the point is that git was killed, not waited for.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("call took %s; git was not killed at the deadline", d)
	}
}

func TestGitOutputCapKillsGit(t *testing.T) {
	repo := histFixture(t)
	endless := writeScript(t, filepath.Join(t.TempDir(), "git"), "exec yes 0123456789\n")
	g := newGitCLI(wsNew(t, repo.dir, WorkspaceOptions{}), GitOptions{Binary: endless})
	out, truncated, err := g.output(t.Context(), 1000, "log")
	if err != nil {
		t.Fatal(err)
	}
	if !truncated || len(out) != 1000 {
		t.Fatalf("truncated = %v, len = %d; want true, 1000", truncated, len(out))
	}
}

func TestGitForeignOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a directory's owner needs root")
	}
	repo := histFixture(t)
	if err := os.Chown(repo.dir, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	trusting, _, _ := gitTools(t, repo.dir, GitOptions{})
	if _, err := runGitTool(t, trusting, map[string]any{}); err != nil {
		t.Errorf("default options: %v", err)
	}
	strict, _, _ := gitTools(t, repo.dir, GitOptions{CheckOwnership: true})
	_, err := runGitTool(t, strict, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "another user owns it") {
		t.Errorf("CheckOwnership: error = %v, want the ownership refusal", err)
	}
}

func TestCheckRef(t *testing.T) {
	for _, ok := range []string{"HEAD", "HEAD~2", "main^2", "v1.2.3", "feature/x-y", "1a2b3c4d", "HEAD@{1}"} {
		if err := checkRef(ok); err != nil {
			t.Errorf("checkRef(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-", "--all", "-n1", "a..b", "a...b", "HEAD:x", "HEAD x", "a\nb", "*", "a\\b", strings.Repeat("a", 201)} {
		if err := checkRef(bad); err == nil {
			t.Errorf("checkRef(%q) = nil, want an error", bad)
		}
	}
}

func TestCheckSince(t *testing.T) {
	for _, ok := range []string{"2024-01-31", "2024-01-31 10:00", "2024-01-31T10:00:00", "2 weeks ago", "3 months ago", "1 year", "yesterday", "last week", "10.days.ago"} {
		if err := checkSince(ok); err != nil {
			t.Errorf("checkSince(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"banana", "--all", "2024-1-1x", "soon", "2 fortnights ago"} {
		if err := checkSince(bad); err == nil {
			t.Errorf("checkSince(%q) = nil, want an error", bad)
		}
	}
}

func TestDenyExcludes(t *testing.T) {
	d := mustDeny(t, []string{".env", "!.env.example", "secrets/", "config/*.pem", "{a,b}.key"})
	got := strings.Join(denyExcludes(d), " ")
	want := ":(exclude,icase,glob)**/.env :(exclude,icase,glob)**/.env/** :(exclude,icase,glob)**/secrets :(exclude,icase,glob)**/secrets/** :(exclude,icase,glob)config/*.pem :(exclude,icase,glob)config/*.pem/**"
	if got != want {
		t.Errorf("denyExcludes =\n%s\nwant\n%s", got, want)
	}
}

// BenchmarkGitTools measures one call of each tool on the fixture: mostly
// the cost of starting git three or four times per call.
func BenchmarkGitTools(b *testing.B) {
	repo := histFixture(b)
	gitLog, gitShow, gitBlame := gitTools(b, repo.dir, GitOptions{})
	for _, c := range []struct {
		name string
		tool Tool
		args string
	}{
		{"log", gitLog, `{"limit":20}`},
		{"log_follow", gitLog, `{"path":"lexer.go"}`},
		{"log_pickaxe", gitLog, `{"pickaxe":"emptyInputGuard"}`},
		{"show_stat", gitShow, `{"commit":"HEAD~1"}`},
		{"show_diff", gitShow, `{"commit":"HEAD~1","path":"lexer.go"}`},
		{"blame", gitBlame, `{"path":"table.txt","end":400}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.tool.Run(b.Context(), json.RawMessage(c.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestScrubWorktreeHostPaths: a git error in a worktree the manager made
// can name the repository it belongs to (a corrupt object in the clone's
// objects), which is a host path the model must not see.
func TestScrubWorktreeHostPaths(t *testing.T) {
	repo := secretHistoryFixture(t)
	tree := filepath.Join(t.TempDir(), "tree")
	histGit(t, repo.dir, nil, "worktree", "add", "-q", "--detach", tree, "HEAD")
	ws := wsNew(t, tree, WorkspaceOptions{GitDir: filepath.Join(repo.dir, ".git", "worktrees", "tree")})
	g := newGitCLI(ws, GitOptions{})
	common := filepath.Join(repo.dir, ".git")
	msg := "error: inflate: data stream error\nfatal: loose object 0123 (stored in " + common + "/objects/01/23) is corrupt"
	got := g.scrub(msg)
	for _, host := range []string{repo.dir, tree, filepath.Dir(tree)} {
		if strings.Contains(got, host) {
			t.Errorf("scrub left the host path %s in:\n%s", host, got)
		}
	}
	if !strings.Contains(got, "objects/01/23") {
		t.Errorf("scrub = %q; want the path inside the repository kept", got)
	}
}
