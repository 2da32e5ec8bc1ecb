package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListFiles(t *testing.T) {
	dir := gitFixture(t)
	wsSymlink(t, "/etc", filepath.Join(dir, "etc"))
	wsSymlink(t, "../main.go", filepath.Join(dir, "sub", "main-link.go"))
	if err := os.MkdirAll(filepath.Join(dir, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := NewListFiles(wsNew(t, dir, WorkspaceOptions{}), Options{})
	checkTool(t, tool, []toolCase{
		{name: "root, ignored and secret files hidden", args: `{}`,
			want:    "./ (9 entries)\n.gitignore\ndocs/\netc@ -> /etc (outside the workspace)\nforced.log\nkeep.log\nlinkdir@ -> sub\nmain.go\nsub/\nuntracked.go\n",
			summary: "9 entries"},
		{name: "subdirectory", args: `{"path":"sub"}`,
			want: "sub/ (4 entries)\n.gitignore\nmain-link.go@ -> ../main.go\nrootonly.txt\ny.go\n"},
		{name: "recursive lists files below", args: `{"path":"./","recursive":true}`,
			want:    "./ (12 files, recursive)\n.gitignore\ndocs/readme.md\netc@ -> /etc (outside the workspace)\nforced.log\nkeep.log\nlinkdir@ -> sub\nmain.go\nsub/.gitignore\nsub/main-link.go@ -> ../main.go\nsub/rootonly.txt\nsub/y.go\nuntracked.go\n",
			summary: "12 files"},
		{name: "ignored directory lists nothing", args: `{"path":"build"}`,
			want: "build/ (0 entries)\n(nothing to list: the directory is empty, or everything in it is ignored or on the deny-list)\n"},
		{name: "empty directory", args: `{"path":"emptydir"}`,
			want: "emptydir/ (0 entries)\n(nothing to list: the directory is empty, or everything in it is ignored or on the deny-list)\n"},
		{name: "symlinked directory not followed", args: `{"path":"linkdir"}`,
			wantErr: true, want: `linkdir is a symlink to sub; symlinked directories are not followed, list "sub" instead`},
		{name: "symlink out", args: `{"path":"etc"}`, wantErr: true, want: "outside the workspace: etc is a symlink that leads out of the repository"},
		{name: "a file", args: `{"path":"main.go"}`, wantErr: true, want: "main.go is a file, not a directory; read it with read_file"},
		{name: "missing with suggestion", args: `{"path":"doc"}`,
			wantErr: true, want: `doc: no such directory; did you mean "docs"?. List the parent directory or use glob to find it: file does not exist`},
		{name: "git internals", args: `{"path":".git"}`, wantErr: true, want: `denied (may hold secrets): ".git" is on the deny-list of secret files and is never shown; answer without it`},
		{name: "outside", args: `{"path":"../"}`, wantErr: true, want: `outside the workspace: "../"; give a path relative to the repository root, such as "README.md" or "src/main.go"`},
	})
}

func TestListFilesWalkerSkipsAndCaps(t *testing.T) {
	dir := t.TempDir()
	wsWriteFiles(t, dir, withNumbered(map[string]string{
		"node_modules/left-pad/index.js": "",
		"target/debug/app":               "",
		"README.md":                      "",
	}, "gen/f%03d.txt", 600))
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	tool := NewListFiles(wsNew(t, dir, WorkspaceOptions{}), Options{})

	out, err := runText(t.Context(), tool, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "./ (2 entries)\nREADME.md\ngen/\n"; out != want {
		t.Errorf("root listing:\n%s\nwant\n%s", out, want)
	}

	out, err = runText(t.Context(), tool, json.RawMessage(`{"recursive":true}`))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "./ (601 files, recursive)" {
		t.Errorf("header = %q", lines[0])
	}
	if got := len(lines) - 2; got != maxListEntries {
		t.Errorf("%d entries shown, want %d", got, maxListEntries)
	}
	if last := lines[len(lines)-1]; last != `… 500 of 601 shown; list a subdirectory (e.g. path="gen") or use glob to narrow` {
		t.Errorf("cap note = %q", last)
	}
	if strings.Contains(out, "node_modules") || strings.Contains(out, "target/") {
		t.Errorf("dependency or build folder listed:\n%s", out)
	}
}
