package tools

import (
	"errors"
	"strings"
	"testing"
)

func TestGitLog(t *testing.T) {
	repo := histFixture(t)
	gitLog, _, _ := gitTools(t, repo.dir, GitOptions{})
	line := func(subject, date, author string) string {
		return repo.short(t, subject) + " " + date + " " + author + "\t" + subject + "\n"
	}
	var (
		table  = line("Add generated table", "2024-03-10", "Alice Example")
		guard  = line("Guard against empty input", "2024-03-01", "Bob Builder")
		rename = line("Rename parser to lexer", "2024-02-15", "Carol Coder")
		remove = line("Remove the env file", "2024-02-05", "Alice Example")
		sets   = line("Add settings", "2024-01-20", "Bob Builder")
		parser = line("Add parser", "2024-01-10", "Alice Example")
	)

	checkTool(t, gitLog, []toolCase{
		{name: "everything, newest first", args: map[string]any{},
			want:    "6 commits, newest first\n" + table + guard + rename + remove + sets + parser,
			summary: "6 commits"},
		{name: "file history follows the rename", args: map[string]any{"path": "lexer.go"},
			want: "3 commits: path lexer.go (following renames), newest first\n" + guard + rename + parser},
		{name: "directory history does not follow", args: map[string]any{"path": "config/"},
			want: "2 commits: path config, newest first\n" + sets + parser},
		{name: "absolute path inside the checkout", args: map[string]any{"path": repo.dir + "/notes.txt"},
			want: "1 commit: path notes.txt (following renames), newest first\n" + guard, summary: "1 commit"},
		{name: "grep ignores case", args: map[string]any{"grep": "RENAME"},
			want: "1 commit: message contains \"RENAME\", newest first\n" + rename},
		{name: "grep searches the body too", args: map[string]any{"grep": "seen in production"},
			want: "1 commit: message contains \"seen in production\", newest first\n" + guard},
		{name: "grep is literal text, not a regexp", args: map[string]any{"grep": "Add.*"},
			want:    "no commits: message contains \"Add.*\". grep searches commit messages, pickaxe searches the code a commit added or removed, author matches part of a name or email; loosen a filter, or check the path with glob.\n",
			summary: "no commits"},
		{name: "pickaxe finds where a string was added", args: map[string]any{"pickaxe": "emptyInputGuard"},
			want: "1 commit: adds or removes \"emptyInputGuard\", newest first\n" + guard},
		{name: "pickaxe with a file path", args: map[string]any{"pickaxe": "func Lex", "path": "lexer.go"},
			want: "1 commit: path lexer.go (following renames), adds or removes \"func Lex\", newest first\n" + parser},
		{name: "author by part of the name", args: map[string]any{"author": "alice"},
			want: "3 commits: author \"alice\", newest first\n" + table + remove + parser},
		{name: "author by email", args: map[string]any{"author": "bob@example"},
			want: "2 commits: author \"bob@example\", newest first\n" + guard + sets},
		{name: "since a date", args: map[string]any{"since": "2024-02-10"},
			want: "3 commits: since 2024-02-10, newest first\n" + table + guard + rename},
		{name: "since relative to now", args: map[string]any{"since": "2 weeks ago"},
			want: "no commits: since 2 weeks ago. grep searches commit messages, pickaxe searches the code a commit added or removed, author matches part of a name or email; loosen a filter, or check the path with glob.\n"},
		{name: "filters combine", args: map[string]any{"author": "bob", "since": "2024-02-01", "path": "lexer.go"},
			want: "1 commit: path lexer.go (following renames), author \"bob\", since 2024-02-01, newest first\n" + guard},
		{name: "limit says older ones exist", args: map[string]any{"limit": 2},
			want: "2 commits, newest first\n" + table + guard + "[older commits exist; raise limit (at most 100) or narrow with path, since, author or grep]\n"},
		{name: "limit above the maximum is the maximum", args: map[string]any{"limit": 1000},
			want: "6 commits, newest first\n" + table + guard + rename + remove + sets + parser},
		{name: "history of a deleted file", args: map[string]any{"path": "parser.go"},
			want: "2 commits: path parser.go (following renames), newest first\n" + rename + parser},
	})
}

func TestGitLogErrors(t *testing.T) {
	repo := histFixture(t)
	gitLog, _, _ := gitTools(t, repo.dir, GitOptions{})
	checkTool(t, gitLog, []toolCase{
		{name: "denied path", args: map[string]any{"path": ".env"}, is: ErrDenied},
		{name: "denied path below", args: map[string]any{"path": "config/.env.prod"}, is: ErrDenied},
		{name: "git dir", args: map[string]any{"path": ".git/config"}, is: ErrDenied},
		{name: "outside", args: map[string]any{"path": "../elsewhere"}, is: ErrOutside},
		{name: "absolute outside", args: map[string]any{"path": "/etc/passwd"}, is: ErrOutside},
		{name: "negative limit", args: map[string]any{"limit": -1}, wantErr: true, contains: []string{`"limit" must be from 1 to 100`}},
		{name: "nonsense since", args: map[string]any{"since": "banana"}, wantErr: true, contains: []string{`"since" "banana" is not a date`}},
		{name: "grep with a newline", args: map[string]any{"grep": "a\nb"}, wantErr: true, contains: []string{`"grep" contains a newline`}},
		{name: "author too long", args: map[string]any{"author": strings.Repeat("a", 300)}, wantErr: true, contains: []string{`"author" is 300 characters long`}},
		{name: "wrong type", args: map[string]any{"limit": "ten"}, wantErr: true, contains: []string{`"limit" must be integer, not string`}},
	})
}

// TestGitLogPickaxeNeverSearchesSecrets: a pickaxe hit is a content
// oracle; asking for a secret's value must not tell whether a secret file
// ever held it.
func TestGitLogPickaxeNeverSearchesSecrets(t *testing.T) {
	repo := histFixture(t)
	gitLog, _, _ := gitTools(t, repo.dir, GitOptions{})
	for _, args := range []map[string]any{
		{"pickaxe": "hunter2-secret"},
		{"pickaxe": "swordfish"},
		{"pickaxe": "swordfish", "path": "config"},
		{"pickaxe": "API_TOKEN", "since": "2024-01-01"},
	} {
		got, err := runGitTool(t, gitLog, args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.HasPrefix(got, "no commits") {
			t.Errorf("%v: a secret file's content was searched:\n%s", args, got)
		}
	}
	// The commit that added them is still found by what else it changed.
	got, err := runGitTool(t, gitLog, map[string]any{"pickaxe": "9090"})
	if err != nil || !strings.Contains(got, "Add settings") {
		t.Errorf("pickaxe 9090: %v\n%s", err, got)
	}
}

// TestGitLogFollowDropsSecretOnlyHits covers the one case git cannot be
// told to skip secret files: --follow allows a single pathspec, and a file
// renamed from a secret name carries the secret's history. The commit that
// blanked the token in the renamed file removed it from the secret's own
// content, so it is a hit on the secret too; a later hit in the file's own
// content is kept.
func TestGitLogFollowDropsSecretOnlyHits(t *testing.T) {
	dir := newHist(t, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add env", write: map[string]string{".env": "TOKEN=opensesame\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Move env to example", rename: [2]string{".env", "settings.conf"}},
		{who: alice, date: "2024-01-12T10:00:00+00:00", msg: "Blank the token", write: map[string]string{"settings.conf": "TOKEN=\n"}},
		{who: alice, date: "2024-01-13T10:00:00+00:00", msg: "Document the token", write: map[string]string{"settings.conf": "TOKEN=\n# not opensesame\n"}},
	}).dir
	gitLog, _, _ := gitTools(t, dir, GitOptions{})
	got, err := runGitTool(t, gitLog, map[string]any{"pickaxe": "opensesame", "path": "settings.conf"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"Add env", "Blank the token"} {
		if strings.Contains(got, c) {
			t.Errorf("the hit in the secret's content (%s) was shown:\n%s", c, got)
		}
	}
	if !strings.Contains(got, "Document the token") {
		t.Errorf("the hit in settings.conf's own content is missing:\n%s", got)
	}
}

// TestGitLogSubdirectoryCheckout: a checkout below the top of its
// repository sees only its own part of the history.
func TestGitLogSubdirectoryCheckout(t *testing.T) {
	repo := histFixture(t)
	gitLog, _, _ := gitTools(t, repo.dir+"/config", GitOptions{})
	got, err := runGitTool(t, gitLog, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	want := "2 commits, newest first\n" +
		repo.short(t, "Add settings") + " 2024-01-20 Bob Builder\tAdd settings\n" +
		repo.short(t, "Add parser") + " 2024-01-10 Alice Example\tAdd parser\n"
	if got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if _, err := runGitTool(t, gitLog, map[string]any{"path": "../lexer.go"}); !errors.Is(err, ErrOutside) {
		t.Errorf("path above the checkout: error = %v, want ErrOutside", err)
	}
}

// TestGitLogPickaxeThroughSecretRenames: git counts a pickaxe string on
// both sides of a rename, so a hit on a file renamed from or to a secret
// file says whether the secret held the string. Such hits are dropped, and
// a right guess and a wrong one get the same answer.
func TestGitLogPickaxeThroughSecretRenames(t *testing.T) {
	repo := secretRenameFixture(t)
	gitLog, _, _ := gitTools(t, repo.dir, GitOptions{})
	// Below the top of the repository, --follow leaves the checkout:
	// config/defaults.txt came from notes/draft.txt.
	subLog, _, _ := gitTools(t, repo.dir+"/config", GitOptions{})

	// A deny pattern git's pathspecs cannot express is only caught by
	// the names git reports, both of a rename's.
	braces := t.TempDir()
	histGit(t, braces, nil, "init", "-q")
	histCommits(t, braces, []histCommit{
		{who: alice, date: "2024-01-10T10:00:00+00:00", msg: "Add secret", write: map[string]string{"config/secret.txt": envLines + "TOKEN=brace-secret\n"}},
		{who: alice, date: "2024-01-11T10:00:00+00:00", msg: "Publish it blanked", remove: []string{"config/secret.txt"},
			write: map[string]string{"config/public.txt": envLines + "TOKEN=\n"}},
		// git quotes a name with a tab unless -z is given, and a quoted
		// name matches no deny pattern.
		{who: alice, date: "2024-01-12T10:00:00+00:00", msg: "Add tabbed secret", write: map[string]string{"config/.env.a\tb": envLines + "KEY=tab-secret\n"}},
		{who: alice, date: "2024-01-13T10:00:00+00:00", msg: "Publish it too", remove: []string{"config/.env.a\tb"},
			write: map[string]string{"config/tabbed.txt": envLines + "KEY=\n"}},
	})
	bracesLog := NewGitLog(wsNew(t, braces, WorkspaceOptions{Deny: []string{"config/{secret,private}.txt"}}), Options{})

	none := func(where string) string {
		return "no commits: " + where + ". grep searches commit messages, pickaxe searches the code a commit added or removed, author matches part of a name or email; loosen a filter, or check the path with glob.\n"
	}
	tests := []struct {
		name string
		tool Tool
		args map[string]any
		want string
	}{
		{name: "followed into a secret, right guess", tool: gitLog, args: map[string]any{"pickaxe": "hunter2-very-secret", "path": "config/env.sample"},
			want: none(`path config/env.sample (following renames), adds or removes "hunter2-very-secret"`)},
		{name: "followed into a secret, wrong guess", tool: gitLog, args: map[string]any{"pickaxe": "wrong-guess", "path": "config/env.sample"},
			want: none(`path config/env.sample (following renames), adds or removes "wrong-guess"`)},
		{name: "whole history", tool: gitLog, args: map[string]any{"pickaxe": "hunter2-very-secret"},
			want: none(`adds or removes "hunter2-very-secret"`)},
		{name: "directory", tool: gitLog, args: map[string]any{"pickaxe": "staging-secret-tiger", "path": "config"},
			want: none(`path config, adds or removes "staging-secret-tiger"`)},
		{name: "a hit on the public side alone is kept", tool: gitLog, args: map[string]any{"pickaxe": "CHANGEME", "path": "config/env.sample"},
			want: "1 commit: path config/env.sample (following renames), adds or removes \"CHANGEME\", newest first\n" +
				repo.short(t, "Promote sample to local secret") + " 2024-01-13 Bob Builder\tPromote sample to local secret\n"},
		{name: "a rename between public files is a hit", tool: gitLog, args: map[string]any{"pickaxe": "PW=CHANGEME", "path": "config/defaults.txt"},
			want: "1 commit: path config/defaults.txt (following renames), adds or removes \"PW=CHANGEME\", newest first\n" +
				repo.short(t, "Split defaults out") + " 2024-01-14 Carol Coder\tSplit defaults out\n"},
		{name: "followed out of a checkout below the top", tool: subLog, args: map[string]any{"pickaxe": "PW=CHANGEME", "path": "defaults.txt"},
			want: none(`path defaults.txt (following renames), adds or removes "PW=CHANGEME"`)},
		{name: "deny pattern without a pathspec form, whole history", tool: bracesLog, args: map[string]any{"pickaxe": "brace-secret"},
			want: none(`adds or removes "brace-secret"`)},
		{name: "deny pattern without a pathspec form, directory", tool: bracesLog, args: map[string]any{"pickaxe": "brace-secret", "path": "config"},
			want: none(`path config, adds or removes "brace-secret"`)},
		{name: "deny pattern without a pathspec form, followed", tool: bracesLog, args: map[string]any{"pickaxe": "brace-secret", "path": "config/public.txt"},
			want: none(`path config/public.txt (following renames), adds or removes "brace-secret"`)},
		{name: "secret with a tab in its name, followed", tool: bracesLog, args: map[string]any{"pickaxe": "tab-secret", "path": "config/tabbed.txt"},
			want: none(`path config/tabbed.txt (following renames), adds or removes "tab-secret"`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runGitTool(t, tc.tool, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
