package tools

import (
	"fmt"
	"strings"
	"testing"
)

func TestGitBlame(t *testing.T) {
	repo := histFixture(t)
	_, _, gitBlame := gitTools(t, repo.dir, GitOptions{})
	parser := repo.short(t, "Add parser") + " Alice Example 2024-01-10\t"
	// 23:30 at -05:00 is already March 2 in UTC; the author's own date
	// is the one shown.
	guard := repo.short(t, "Guard against empty input") + " Bob Builder 2024-03-01\t"
	head := repo.sha["Add generated table"][:8]
	lexer := []string{
		"1\t" + parser + "package lexer",
		"2\t" + parser,
		"3\t" + parser + "// Lex splits src into tokens.",
		"4\t" + parser + "func Lex(src string) []string {",
		"5\t" + guard + "\tif emptyInputGuard(src) {",
		"6\t" + guard + "\t\treturn nil",
		"7\t" + guard + "\t}",
		"8\t" + parser + "\tvar out []string",
		"9\t" + parser + "\tfor _, f := range split(src) {",
		"10\t" + parser + "\t\tout = append(out, f)",
		"11\t" + parser + "\t}",
		"12\t" + parser + "\treturn out",
		"13\t" + parser + "}",
	}
	lines := func(from, to int) string { return strings.Join(lexer[from-1:to], "\n") + "\n" }
	var table400 strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&table400, "%d\t%s Alice Example 2024-03-10\trow %04d\n", i, head, i)
	}

	checkTool(t, gitBlame, []toolCase{
		{name: "whole short file, through the rename", args: map[string]any{"path": "lexer.go"},
			want:    "blame of lexer.go at HEAD (" + head + "), lines 1–13 of 13\n" + lines(1, 13),
			summary: "lines 1–13 of 13"},
		{name: "a range", args: map[string]any{"path": "lexer.go", "start": 5, "end": 7},
			want:    "blame of lexer.go at HEAD (" + head + "), lines 5–7 of 13\n" + lines(5, 7) + "[continue with start=8]\n",
			summary: "lines 5–7 of 13"},
		{name: "end past the end is cut to it", args: map[string]any{"path": "lexer.go", "start": 12, "end": 50},
			want: "blame of lexer.go at HEAD (" + head + "), lines 12–13 of 13\n" + lines(12, 13)},
		{name: "start alone reads on from there", args: map[string]any{"path": "lexer.go", "start": 13},
			want: "blame of lexer.go at HEAD (" + head + "), lines 13–13 of 13\n" + lines(13, 13)},
		{name: "at most 400 lines per call", args: map[string]any{"path": "table.txt", "start": 1, "end": 1000},
			want:    "blame of table.txt at HEAD (" + head + "), lines 1–400 of 1000\n" + table400.String() + "[continue with start=401]\n",
			summary: "lines 1–400 of 1000"},
		{name: "default is the first 200 lines", args: map[string]any{"path": "table.txt"},
			want: "blame of table.txt at HEAD (" + head + "), lines 1–200 of 1000\n" +
				strings.Join(strings.SplitAfter(table400.String(), "\n")[:200], "") + "[continue with start=201]\n"},
		{name: "as of an older commit", args: map[string]any{"path": "lexer.go", "commit": "HEAD~2", "start": 4, "end": 5},
			want: "blame of lexer.go at HEAD~2 (" + repo.short(t, "Rename parser to lexer") + "), lines 4–5 of 10\n" +
				"4\t" + parser + "func Lex(src string) []string {\n" +
				"5\t" + parser + "\tvar out []string\n" +
				"[continue with start=6]\n"},
		{name: "a file since renamed, at a commit where it existed", args: map[string]any{"path": "parser.go", "commit": repo.sha["Add parser"][:10], "end": 1},
			want: "blame of parser.go at " + repo.sha["Add parser"][:10] + " (" + repo.short(t, "Add parser") + "), lines 1–1 of 10\n" +
				"1\t" + parser + "package lexer\n[continue with start=2]\n"},
	})
}

func TestGitBlameErrors(t *testing.T) {
	repo := histFixture(t)
	histCommits(t, repo.dir, []histCommit{{who: carol, date: "2024-04-01T10:00:00+00:00", msg: "Add odd files",
		write: map[string]string{"logo.png": "\x89PNG\x00\x00\x01", "empty.txt": "", "noeol.txt": "a\nb"}}})
	wsWriteFiles(t, repo.dir, map[string]string{"draft.go": "package lexer\n"}) // never committed
	_, _, gitBlame := gitTools(t, repo.dir, GitOptions{})
	checkTool(t, gitBlame, []toolCase{
		{name: "start past the end", args: map[string]any{"path": "lexer.go", "start": 20, "end": 30},
			wantErr: true, contains: []string{"start 20 is past the end of lexer.go, which has 13 lines at HEAD; use start from 1 to 13"}},
		{name: "last line without newline counts", args: map[string]any{"path": "noeol.txt", "start": 3},
			wantErr: true, contains: []string{"start 3 is past the end of noeol.txt, which has 2 lines at HEAD"}},
		{name: "end before start", args: map[string]any{"path": "lexer.go", "start": 5, "end": 2}, wantErr: true, contains: []string{`"end" (2) is before "start" (5)`}},
		{name: "negative", args: map[string]any{"path": "lexer.go", "start": -1}, wantErr: true, contains: []string{"1-based line numbers"}},
		{name: "no path", args: map[string]any{}, wantErr: true, contains: []string{`"path" is required`}},
		{name: "root", args: map[string]any{"path": "."}, wantErr: true, contains: []string{"names the repository root"}},
		{name: "directory", args: map[string]any{"path": "config"}, wantErr: true, contains: []string{"config is a directory at HEAD"}},
		{name: "deleted file", args: map[string]any{"path": "parser.go"}, wantErr: true, contains: []string{"parser.go does not exist at HEAD; check the path with glob"}},
		{name: "uncommitted file", args: map[string]any{"path": "draft.go"}, wantErr: true, contains: []string{"draft.go does not exist at HEAD"}},
		{name: "binary", args: map[string]any{"path": "logo.png"}, wantErr: true, contains: []string{"logo.png is a binary file at HEAD"}},
		{name: "empty", args: map[string]any{"path": "empty.txt"}, wantErr: true, contains: []string{"empty.txt is empty at HEAD"}},
		{name: "denied", args: map[string]any{"path": ".env", "commit": "HEAD~4"}, is: ErrDenied},
		{name: "denied in a directory", args: map[string]any{"path": "config/.env.prod"}, is: ErrDenied},
		{name: "outside", args: map[string]any{"path": "../x.go"}, is: ErrOutside},
		{name: "unknown commit", args: map[string]any{"path": "lexer.go", "commit": "nosuchbranch"}, wantErr: true, contains: []string{`no commit named "nosuchbranch"`}},
	})
}

func TestParsePorcelainLongLine(t *testing.T) {
	sha := strings.Repeat("ab", 20)
	long := strings.Repeat("x", maxLineRunes+10)
	out := sha + " 1 1 1\nauthor Dana\nauthor-mail <d@x>\nauthor-time 1700000000\nauthor-tz +0100\nsummary s\nfilename f\n\t" + long + "\r\n"
	lines := parsePorcelain([]byte(out))
	if len(lines) != 1 || lines[0].author != "Dana" || lines[0].date != "2023-11-14" || lines[0].no != 1 {
		t.Fatalf("parsed %+v", lines)
	}
	got := blameText(lines[0].text)
	if !strings.HasSuffix(got, fmt.Sprintf("x … [line truncated at %d characters]", maxLineRunes)) {
		t.Errorf("long line not cut: ...%s", got[len(got)-60:])
	}
}

// TestGitBlameAcrossSecretRename: blame follows a file back through a
// rename from a secret file, which is fine as long as what it prints is
// the blamed file's own lines: the commits that wrote them, never the
// secret's path or its old text.
func TestGitBlameAcrossSecretRename(t *testing.T) {
	repo := secretRenameFixture(t)
	_, _, gitBlame := gitTools(t, repo.dir, GitOptions{})
	turn := repo.sha["Turn env into a sample"]
	add := repo.short(t, "Add env") + " Alice Example 2024-01-10\t"
	checkTool(t, gitBlame, []toolCase{
		{name: "lines from before the rename", args: map[string]any{"path": "config/env.sample", "commit": turn},
			want: "blame of config/env.sample at " + turn + " (" + turn[:8] + "), lines 1–6 of 6\n" +
				"1\t" + add + "APP_NAME=shop\n" +
				"2\t" + add + "APP_PORT=8080\n" +
				"3\t" + add + "APP_HOST=localhost\n" +
				"4\t" + add + "APP_MODE=prod\n" +
				"5\t" + add + "APP_LOG=info\n" +
				"6\t" + turn[:8] + " Alice Example 2024-01-11\tDB_PASSWORD=CHANGEME\n"},
		{name: "a file paired with a secret only within its directory", args: map[string]any{"path": "config/defaults.txt", "start": 9},
			want: "blame of config/defaults.txt at HEAD (" + repo.short(t, "Rotate prod password") + "), lines 9–11 of 11\n" +
				"9\t" + add + "NOTE=draft\n" +
				"10\t" + add + "EXTRA=1\n" +
				"11\t" + repo.short(t, "Split defaults out") + " Carol Coder 2024-01-14\tPW=CHANGEME\n"},
	}, "hunter2", "staging-secret", ".env")
}
