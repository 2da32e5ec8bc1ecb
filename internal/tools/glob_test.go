package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	tool := NewGlob(wsOf(t, withNumbered(map[string]string{
		"main.go":               "",
		"cmd/bot/main.go":       "",
		"cmd/cli/main.go":       "",
		"internal/a/a.go":       "",
		"internal/a/a_test.go":  "",
		"internal/b/b_test.go":  "",
		"Dockerfile":            "",
		"deploy/Dockerfile.dev": "",
		"web/app.ts":            "",
		"certs/server.pem":      "",
	}, "data/d%03d.json", 150)), Options{})
	checkTool(t, tool, []toolCase{
		{name: "name pattern matches at any depth", args: `{"pattern":"*_test.go"}`,
			want: "2 files match \"*_test.go\"\ninternal/a/a_test.go\ninternal/b/b_test.go\n", summary: "2 files"},
		{name: "doublestar", args: `{"pattern":"**/main.go"}`,
			want: "3 files match \"**/main.go\"\ncmd/bot/main.go\ncmd/cli/main.go\nmain.go\n"},
		{name: "path pattern anchored at the root", args: `{"pattern":"cmd/*/main.go"}`,
			want: "2 files match \"cmd/*/main.go\"\ncmd/bot/main.go\ncmd/cli/main.go\n"},
		{name: "braces", args: `{"pattern":"*.{ts,go}","path":"web"}`,
			want: "1 file match \"*.{ts,go}\" under web/\nweb/app.ts\n"},
		{name: "path limits the search", args: `{"pattern":"*.go","path":"internal/a"}`,
			want: "2 files match \"*.go\" under internal/a/\ninternal/a/a.go\ninternal/a/a_test.go\n"},
		{name: "leading ./ and prefix", args: `{"pattern":"./Dockerfile*"}`,
			want: "2 files match \"Dockerfile*\"\nDockerfile\ndeploy/Dockerfile.dev\n"},
		{name: "secret files never match", args: `{"pattern":"*.pem"}`,
			want:    "no files match \"*.pem\". A pattern without \"/\" matches file names at any depth and \"**\" crosses directories; ignored and secret files are never listed. Use list_files to see the layout.\n",
			summary: "no match"},
		{name: "empty pattern", args: `{"pattern":" "}`, wantErr: true, want: `"pattern" is required: a file name pattern such as "**/*_test.go" or "Dockerfile*"`},
		{name: "invalid pattern", args: `{"pattern":"[abc"}`, wantErr: true, want: `pattern "[abc" is not a valid glob (check that brackets and braces are closed); examples: "**/*.go", "src/**/test_*.py"`},
		{name: "outside path", args: `{"pattern":"*","path":"/etc"}`, wantErr: true, want: `outside the workspace: "/etc"; give a path relative to the repository root, such as "README.md" or "src/main.go"`},
	})

	t.Run("cap", func(t *testing.T) {
		out, err := runText(t.Context(), tool, json.RawMessage(`{"pattern":"data/*.json"}`))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if lines[0] != `150 files match "data/*.json"` || len(lines) != maxGlobResults+2 {
			t.Errorf("header %q, %d lines", lines[0], len(lines))
		}
		if last := lines[len(lines)-1]; last != "… 100 of 150 shown; make the pattern more specific or give a path" {
			t.Errorf("cap note = %q", last)
		}
	})
}
