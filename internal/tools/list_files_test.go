package tools

import (
	"encoding/json"
	"fmt"
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
	tests := []struct {
		name    string
		input   string
		want    string
		wantErr string
		summary string
	}{
		{name: "root, ignored and secret files hidden", input: `{}`,
			want:    "./ (9 entries)\n.gitignore\ndocs/\netc@ -> /etc (outside the workspace)\nforced.log\nkeep.log\nlinkdir@ -> sub\nmain.go\nsub/\nuntracked.go\n",
			summary: "9 entries"},
		{name: "subdirectory", input: `{"path":"sub"}`,
			want: "sub/ (4 entries)\n.gitignore\nmain-link.go@ -> ../main.go\nrootonly.txt\ny.go\n"},
		{name: "recursive lists files below", input: `{"path":"./","recursive":true}`,
			want:    "./ (12 files, recursive)\n.gitignore\ndocs/readme.md\netc@ -> /etc (outside the workspace)\nforced.log\nkeep.log\nlinkdir@ -> sub\nmain.go\nsub/.gitignore\nsub/main-link.go@ -> ../main.go\nsub/rootonly.txt\nsub/y.go\nuntracked.go\n",
			summary: "12 files"},
		{name: "ignored directory lists nothing", input: `{"path":"build"}`,
			want: "build/ (0 entries)\n(nothing to list: the directory is empty, or everything in it is ignored or on the deny-list)\n"},
		{name: "empty directory", input: `{"path":"emptydir"}`,
			want: "emptydir/ (0 entries)\n(nothing to list: the directory is empty, or everything in it is ignored or on the deny-list)\n"},
		{name: "symlinked directory not followed", input: `{"path":"linkdir"}`,
			wantErr: `linkdir is a symlink to sub; symlinked directories are not followed, list "sub" instead`},
		{name: "symlink out", input: `{"path":"etc"}`, wantErr: "outside the workspace: etc is a symlink that leads out of the repository"},
		{name: "a file", input: `{"path":"main.go"}`, wantErr: "main.go is a file, not a directory; read it with read_file"},
		{name: "missing with suggestion", input: `{"path":"doc"}`,
			wantErr: `doc: no such directory; did you mean "docs"?. List the parent directory or use glob to find it: file does not exist`},
		{name: "git internals", input: `{"path":".git"}`, wantErr: `denied (may hold secrets): ".git" is on the deny-list of secret files and is never shown; answer without it`},
		{name: "outside", input: `{"path":"../"}`, wantErr: `outside the workspace: "../"; give a path relative to the repository root, such as "README.md" or "src/main.go"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runText(t.Context(), tool, json.RawMessage(tt.input))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v\nwant    %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out, tt.want)
			}
			if tt.summary != "" {
				if s := tool.Summarize(out); s != tt.summary {
					t.Errorf("summary = %q, want %q", s, tt.summary)
				}
			}
		})
	}
}

func TestListFilesWalkerSkipsAndCaps(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"node_modules/left-pad/index.js": "",
		"target/debug/app":               "",
		"README.md":                      "",
	}
	for i := range 600 {
		files[fmt.Sprintf("gen/f%03d.txt", i)] = ""
	}
	wsWriteFiles(t, dir, files)
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
