package tools

import (
	"fmt"
	"strings"
	"testing"
)

func TestGitShow(t *testing.T) {
	repo := histFixture(t)
	_, gitShow, _ := gitTools(t, repo.dir, GitOptions{})
	header := func(subject string) string {
		return "commit " + repo.sha[subject] + "\n"
	}
	const pathHint = "\n[pass path (a file from the list above) to see its diff in this commit]\n"

	checkTool(t, gitShow, []toolCase{
		{name: "default HEAD: metadata, message and stat", args: map[string]any{},
			want: header("Add generated table") +
				"Author: Alice Example <alice@example.com>\n" +
				"Date:   2024-03-10 10:00:00 +0000\n" +
				"Parents: " + repo.short(t, "Guard against empty input")[:7] + "\n\n" +
				"Add generated table\n\n" +
				" table.txt | 1000 ++++++++++++++++++++\n" +
				" 1 file changed, 1000 insertions(+)\n" + pathHint,
			summary: repo.short(t, "Add generated table") + ": 1 file changed"},
		{name: "full message, author's time zone, path diff", args: map[string]any{"commit": repo.short(t, "Guard against empty input"), "path": "lexer.go"},
			want: header("Guard against empty input") +
				"Author: Bob Builder <bob@example.com>\n" +
				"Date:   2024-03-01 23:30:00 -0500\n" +
				"Parents: " + repo.short(t, "Rename parser to lexer")[:7] + "\n\n" +
				"Guard against empty input\n\nThe lexer crashed on an empty file.\nSeen in production.\n\n" +
				" lexer.go  | 3 +++\n" +
				" notes.txt | 1 +\n" +
				" 2 files changed, 4 insertions(+)\n\n" +
				"diff --git a/lexer.go b/lexer.go\n" +
				"index 3056144..dd439a5 100644\n" +
				"--- a/lexer.go\n" +
				"+++ b/lexer.go\n" +
				"@@ -2,6 +2,9 @@ package lexer\n" +
				" \n" +
				" // Lex splits src into tokens.\n" +
				" func Lex(src string) []string {\n" +
				"+\tif emptyInputGuard(src) {\n" +
				"+\t\treturn nil\n" +
				"+\t}\n" +
				" \tvar out []string\n" +
				" \tfor _, f := range split(src) {\n" +
				" \t\tout = append(out, f)\n",
			summary: repo.short(t, "Guard against empty input") + ": 2 files changed, with diff"},
		{name: "rename in the stat", args: map[string]any{"commit": "HEAD~2"},
			contains: []string{" parser.go => lexer.go | 0\n", pathHint}},
		{name: "first commit has no parents", args: map[string]any{"commit": "HEAD~5"},
			contains: []string{"\nParents: none (the first commit)\n", " config/app.yaml |  1 +\n"}},
		// A denied file's name and line counts would tell that a
		// secret changed, and by how much.
		{name: "secret files are left out of the stat", args: map[string]any{"commit": "HEAD~4"},
			contains: []string{"\n\n config/app.yaml | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"},
			absent:   []string{".env", "hunter2", "swordfish", "API_TOKEN"}},
		{name: "directory diff leaves secret files out", args: map[string]any{"commit": "HEAD~4", "path": "config"},
			contains: []string{"-port: 8080\n+port: 9090\n"},
			absent:   []string{".env", "swordfish", "DB_PASSWORD", "hunter2"}},
		{name: "whole-checkout path is the stat only", args: map[string]any{"commit": "HEAD~4", "path": "."},
			contains: []string{pathHint}, absent: []string{"diff --git", "hunter2"}},
		{name: "path not in the commit", args: map[string]any{"commit": "HEAD~1", "path": "README.md"},
			contains: []string{"\n[README.md is not changed in commit " + repo.short(t, "Guard against empty input") + "; pass a path from the list above]\n"}},
		{name: "diff cut at 400 lines", args: map[string]any{"path": "table.txt"},
			contains: []string{"+row 0394\n[diff cut at 400 lines; it goes on. To see more, read the file as it is now with read_file, or see which commit wrote which lines with git_blame]\n"},
			absent:   []string{"+row 0395"}},
	})
}

func TestGitShowCaps(t *testing.T) {
	repo := histFixture(t)
	var wide strings.Builder
	for i := range 300 {
		fmt.Fprintf(&wide, "%03d %s\n", i, strings.Repeat("w", 300))
	}
	files := map[string]string{"wide.txt": wide.String()}
	for i := range 350 {
		files[fmt.Sprintf("gen/f%03d.txt", i)] = "x\n"
	}
	histCommits(t, repo.dir, []histCommit{{who: carol, date: "2024-04-01T10:00:00+00:00", msg: "Add wide and many", write: files}})
	_, gitShow, _ := gitTools(t, repo.dir, GitOptions{})

	got, err := runGitTool(t, gitShow, map[string]any{"path": "wide.txt"})
	if err != nil {
		t.Fatal(err)
	}
	_, diff, _ := strings.Cut(got, "diff --git")
	if n := len(diff); n > diffMaxBytes {
		t.Errorf("diff is %d bytes, over the %d cap", n, diffMaxBytes)
	}
	if !strings.Contains(got, "[diff cut at ") || strings.Contains(got, "+299 ") {
		t.Errorf("wide diff not cut:\n...%s", got[len(got)-300:])
	}

	// The stat lists at most statFiles files, then says how many more.
	if !strings.Contains(got, " gen/f299.txt | 1 +\n") || strings.Contains(got, "gen/f300.txt") {
		t.Errorf("stat not cut at %d files:\n%s", statFiles, got[:min(len(got), 3000)])
	}
	if !strings.Contains(got, " 351 files changed") {
		t.Errorf("stat lost its summary line")
	}

	got, err = runGitTool(t, gitShow, map[string]any{"path": "gen"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "[diff cut at 400 lines; it goes on. To see more, pass one file's path to see its diff alone]") {
		t.Errorf("directory diff not cut with a hint to pass a file:\n...%s", got[len(got)-300:])
	}
}

func TestGitShowMergeShowsWhatItBroughtIn(t *testing.T) {
	repo := histFixture(t)
	histGit(t, repo.dir, nil, "checkout", "-q", "-b", "feature", "HEAD~1")
	histCommits(t, repo.dir, []histCommit{{who: carol, date: "2024-04-01T10:00:00+00:00", msg: "Feature work", write: map[string]string{"feature.go": "package feature\n"}}})
	histGit(t, repo.dir, nil, "checkout", "-q", "main")
	histGit(t, repo.dir, []string{"GIT_AUTHOR_NAME=Carol Coder", "GIT_AUTHOR_EMAIL=carol@example.com", "GIT_COMMITTER_NAME=Carol Coder", "GIT_COMMITTER_EMAIL=carol@example.com"},
		"merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
	_, gitShow, _ := gitTools(t, repo.dir, GitOptions{})
	got, err := runGitTool(t, gitShow, map[string]any{"path": "feature.go"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Merge feature\n", " feature.go | 1 +\n", "+package feature\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("merge output lacks %q:\n%s", want, got)
		}
	}
}

func TestGitShowErrors(t *testing.T) {
	repo := histFixture(t)
	_, gitShow, _ := gitTools(t, repo.dir, GitOptions{})
	checkTool(t, gitShow, []toolCase{
		{name: "denied path", args: map[string]any{"commit": "HEAD~4", "path": ".env"}, is: ErrDenied},
		{name: "denied path in a directory", args: map[string]any{"commit": "HEAD~4", "path": "config/.env.prod"}, is: ErrDenied},
		{name: "outside", args: map[string]any{"path": "../../etc/passwd"}, is: ErrOutside},
		{name: "unknown commit", args: map[string]any{"commit": "deadbeef"}, wantErr: true, contains: []string{`no commit named "deadbeef" in this repository; use a sha from git_log`}},
		{name: "a tree is not a commit", args: map[string]any{"commit": "HEAD^{tree}"}, wantErr: true, contains: []string{`no commit named "HEAD^{tree}"`}},
		{name: "beyond the first commit", args: map[string]any{"commit": "HEAD~50"}, wantErr: true, contains: []string{`no commit named "HEAD~50"`}},
	})
}

// TestGitShowSubdirectoryCheckout: below the top of its repository a
// checkout sees its own files only, named relative to itself.
func TestGitShowSubdirectoryCheckout(t *testing.T) {
	repo := histFixture(t)
	_, gitShow, gitBlame := gitTools(t, repo.dir+"/config", GitOptions{})
	got, err := runGitTool(t, gitShow, map[string]any{"commit": repo.sha["Add settings"], "path": "app.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" app.yaml | 2 +-\n", " 1 file changed", "--- a/app.yaml\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, ".env") || strings.Contains(got, "config/") {
		t.Errorf("output shows files outside the checkout:\n%s", got)
	}
	got, err = runGitTool(t, gitBlame, map[string]any{"path": "app.yaml"})
	if err != nil || !strings.Contains(got, "1\t"+repo.short(t, "Add settings")+" Bob Builder 2024-01-20\tport: 9090\n") {
		t.Errorf("blame in a subdirectory: %v\n%s", err, got)
	}
}

// TestGitShowNeverPairsSecretRenames: git diffs a renamed file against its
// old path's content, so a rename from or to a secret file would print the
// secret's lines under the public name, in the patch and as line counts in
// the diffstat. Such pairs are split into a deletion and an addition.
func TestGitShowNeverPairsSecretRenames(t *testing.T) {
	repo := secretRenameFixture(t)
	_, gitShow, _ := gitTools(t, repo.dir, GitOptions{})
	const split = "[renames in this commit are listed as a deletion and an addition]\n"
	secrets := []string{"hunter2", "tiger-local-secret", "staging-secret-tiger", "prod-one", "prod-two"}

	checkTool(t, gitShow, []toolCase{
		{name: "directory holding a rename from a secret", args: map[string]any{"commit": repo.sha["Turn env into a sample"], "path": "config"},
			contains: []string{
				"\n\n config/env.sample | 6 ++++++\n 1 file changed, 6 insertions(+)\n",
				"diff --git a/config/env.sample b/config/env.sample\nnew file mode 100644\n",
				"+DB_PASSWORD=CHANGEME\n"},
			absent: []string{"=>", "rename from", "similarity", ".env", split}},
		{name: "the renamed file itself", args: map[string]any{"commit": repo.sha["Turn env into a sample"], "path": "config/env.sample"},
			contains: []string{"new file mode 100644\n", "+APP_NAME=shop\n", "+DB_PASSWORD=CHANGEME\n"},
			absent:   []string{"=>", "rename from", "-DB_PASSWORD", ".env"}},
		{name: "stat only", args: map[string]any{"commit": repo.sha["Turn env into a sample"]},
			contains: []string{" 1 file changed, 6 insertions(+)\n"},
			absent:   []string{"=>", ".env", "deletion"}},
		{name: "a rename between public files is still one", args: map[string]any{"commit": repo.sha["Rename app config"], "path": "config"},
			contains: []string{" config/{app.yaml => settings.yaml} | 0\n", "rename from config/app.yaml\nrename to config/settings.yaml\n"},
			absent:   []string{split, "not shown"}},
		{name: "rename to a secret shows the public side as deleted", args: map[string]any{"commit": repo.sha["Promote sample to local secret"], "path": "config"},
			contains: []string{" config/env.sample | 6 ------\n",
				"deleted file mode 100644\n", "-DB_PASSWORD=CHANGEME\n"},
			absent: []string{"=>", "rename to", "+DB_PASSWORD", ".env"}},
		{name: "pair found only within the directory", args: map[string]any{"commit": repo.sha["Split defaults out"], "path": "config"},
			contains: []string{" notes/draft.txt => config/defaults.txt | 1 +\n",
				"new file mode 100644\n", "+PW=CHANGEME\n"},
			absent: []string{split, "rename from", "-PW", ".env"}},
		{name: "pair to a secret found only within the directory", args: map[string]any{"commit": repo.sha["Move template out"], "path": "config"},
			contains: []string{" {config => other}/template.txt | 0\n",
				"deleted file mode 100644\n", "-NOTE=template\n"},
			absent: []string{split, "rename to", "+PW", "dev-secret-lynx", ".env"}},
		{name: "commit touching only a secret file: stat", args: map[string]any{"commit": repo.sha["Rotate prod password"]},
			contains: []string{"\nRotate prod password\n\n[pass path"},
			absent:   []string{".env", "file changed", "diff --git"}},
		{name: "commit touching only a secret file: its directory", args: map[string]any{"commit": repo.sha["Rotate prod password"], "path": "config"},
			contains: []string{"\n\n[config is not changed in commit " + repo.sha["Rotate prod password"][:8] + "; pass a path from the list above]\n"},
			absent:   []string{".env", "diff --git", "@@"}},
	}, secrets...)
}

// TestGitShowIgnoresRepositoryRenameConfig: diff.renames=copies in the
// repository's own config would pair a new file with a secret it was
// copied from; the rename flag is always given on the command line.
func TestGitShowIgnoresRepositoryRenameConfig(t *testing.T) {
	dir := t.TempDir()
	histGit(t, dir, nil, "init", "-q")
	histGit(t, dir, nil, "config", "diff.renames", "copies")
	histCommits(t, dir, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add env", write: map[string]string{"config/.env": envSecret}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Copy env to a sample", write: map[string]string{
			"config/.env": envSecret + "EXTRA=1\n", "config/env.sample": envSample}},
	})
	_, gitShow, _ := gitTools(t, dir, GitOptions{})
	got, err := runGitTool(t, gitShow, map[string]any{"path": "config"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hunter2", "copy from", "=>"} {
		if strings.Contains(got, s) {
			t.Errorf("output has %q:\n%s", s, got)
		}
	}
	if !strings.Contains(got, "+DB_PASSWORD=CHANGEME\n") {
		t.Errorf("the sample's own diff is missing:\n%s", got)
	}
}
