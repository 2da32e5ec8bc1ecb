package tools

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	var big strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&big, "%04d %s\n", i, strings.Repeat("x", 95))
	}
	var many strings.Builder
	for i := 1; i <= 2500; i++ {
		fmt.Fprintf(&many, "l%d\n", i)
	}
	wsWriteFiles(t, dir, map[string]string{
		"five.txt":         "one\ntwo\nthree\nfour\nfive\n",
		"noeol.txt":        "a\nb",
		"crlf.txt":         "a\r\nb\r\n",
		"empty.txt":        "",
		"bin.dat":          "ELF\x00\x01\x02" + strings.Repeat("z", 2000),
		"long.txt":         "short\n" + strings.Repeat("é", 2500) + "\nafter\n",
		"latin1.txt":       "caf\xe9\n",
		"big.txt":          big.String(),
		"many.txt":         many.String(),
		"src/main.go":      "package main\n",
		"src/server.go":    "package main\n",
		"docs/Main.go.txt": "x\n",
		".env":             "SECRET=1\n",
	})
	ws := wsNew(t, dir, WorkspaceOptions{})
	tool := NewReadFile(ws, Options{})

	checkTool(t, tool, []toolCase{
		{name: "whole file numbered", args: `{"path":"five.txt"}`,
			want: "1\tone\n2\ttwo\n3\tthree\n4\tfour\n5\tfive\n", summary: "5 lines"},
		{name: "page with continuation footer", args: `{"path":"five.txt","offset":2,"limit":2}`,
			want: "2\ttwo\n3\tthree\n[lines 2–3 of 5; continue with offset=4]\n", summary: "lines 2–3 of 5"},
		{name: "last page has no footer", args: `{"path":"five.txt","offset":4,"limit":10}`,
			want: "4\tfour\n5\tfive\n"},
		{name: "offset zero reads from the start", args: `{"path":"five.txt","offset":0,"limit":1}`,
			want: "1\tone\n[lines 1–1 of 5; continue with offset=2]\n"},
		{name: "no final newline", args: `{"path":"noeol.txt"}`, want: "1\ta\n2\tb\n"},
		{name: "crlf", args: `{"path":"crlf.txt"}`, want: "1\ta\n2\tb\n"},
		{name: "default limit", args: `{"path":"many.txt"}`,
			contains: []string{"2000\tl2000\n[lines 1–2000 of 2500; continue with offset=2001]"}},
		{name: "offset past the end", args: `{"path":"five.txt","offset":9}`, wantErr: true,
			contains: []string{"offset 9 is past the end of five.txt, which has 5 lines"}},
		{name: "negative offset", args: `{"path":"five.txt","offset":-1}`, wantErr: true,
			contains: []string{`"offset" must be 1 or more`}},
		{name: "negative limit", args: `{"path":"five.txt","limit":-5}`, wantErr: true,
			contains: []string{`"limit" must be 1 or more`}},
		{name: "empty path", args: `{}`, wantErr: true, contains: []string{`"path" is required`}},
		{name: "invalid json", args: `{"path":5}`, wantErr: true,
			contains: []string{`arguments are not valid JSON or have the wrong type: "path" must be string, not number; expected {"path": string, "offset": integer, "limit": integer}`}},
		{name: "empty file", args: `{"path":"empty.txt"}`, want: "empty.txt is empty (0 bytes).", summary: "empty file"},
		{name: "binary refused with size", args: `{"path":"bin.dat"}`, wantErr: true,
			contains: []string{"bin.dat is a binary file (2.0 KB)"}},
		{name: "long line cut", args: `{"path":"long.txt"}`,
			contains: []string{"1\tshort\n2\t" + strings.Repeat("é", 2000) + " … [line truncated at 2000 characters; it is 5001 bytes long]\n3\tafter\n"}},
		{name: "invalid utf-8 replaced", args: `{"path":"latin1.txt"}`, want: "1\tcaf\uFFFD\n"},
		{name: "byte cap with continuation", args: `{"path":"big.txt"}`,
			contains: []string{"\n[lines 1–291 of 3000 (output capped at 30 KB); continue with offset=292]\n"}},
		{name: "directory", args: `{"path":"src"}`, wantErr: true,
			contains: []string{"src is a directory", "list_files"}},
		{name: "missing file with suggestions", args: `{"path":"src/mian.go"}`, wantErr: true,
			contains: []string{`src/mian.go: file does not exist; did you mean "src/main.go"`, "glob", "list_files"}},
		{name: "missing file same name elsewhere", args: `{"path":"main.go"}`, wantErr: true,
			contains: []string{`did you mean "src/main.go"`}},
		{name: "missing file wrong case", args: `{"path":"SRC/Server.go"}`, wantErr: true,
			contains: []string{`did you mean "src/server.go"`}},
		{name: "denied", args: `{"path":".env"}`, wantErr: true, contains: []string{"deny-list"}},
		{name: "outside", args: `{"path":"../../etc/passwd"}`, wantErr: true, contains: []string{"outside the workspace"}},
		{name: "absolute inside", args: fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "five.txt")), contains: []string{"1\tone\n"}},
	})

	t.Run("byte cap holds and pages join up", func(t *testing.T) {
		var lines int
		offset := 1
		for page := 0; page < 20; page++ {
			out, err := runText(t.Context(), tool, json.RawMessage(fmt.Sprintf(`{"path":"big.txt","offset":%d}`, offset)))
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > DefaultOutputLimit {
				t.Fatalf("page of %d bytes, over the output limit", len(out))
			}
			body, footer, more := strings.Cut(out, "\n[lines ")
			if !more {
				lines += strings.Count(body, "\n")
				break
			}
			lines += strings.Count(body, "\n") + 1
			if _, err := fmt.Sscanf(footer[strings.Index(footer, "offset=")+len("offset="):], "%d", &offset); err != nil {
				t.Fatal(err)
			}
		}
		if lines != 3000 {
			t.Errorf("paging read %d lines, want 3000", lines)
		}
	})
}
