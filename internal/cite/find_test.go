package cite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// short renders a citation compactly for table tests.
func short(c Citation) string {
	s := fmt.Sprintf("%s %d-%d %q", c.Path, c.Start, c.End, c.Raw)
	if c.Code {
		s += " code"
	}
	if c.Linked {
		s += " linked dest=" + c.Dest
	}
	if c.InTable {
		s += " table"
	}
	return s
}

func TestFind(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want []string
	}{
		{"plain line", "The loop is in internal/retry/retry.go:42 and nowhere else.",
			[]string{`internal/retry/retry.go 42-42 "internal/retry/retry.go:42"`}},
		{"range", "See internal/server/http.go:42-57.",
			[]string{`internal/server/http.go 42-57 "internal/server/http.go:42-57"`}},
		{"en dash range", "See internal/server/http.go:42–57, then go on.",
			[]string{`internal/server/http.go 42-57 "internal/server/http.go:42–57"`}},
		{"inline code", "It is defined in `internal/agent/loop.go:120-135`.",
			[]string{"internal/agent/loop.go 120-135 \"`internal/agent/loop.go:120-135`\" code"}},
		{"inline code with padding", "see `` cmd/bot/main.go:7 ``",
			[]string{"cmd/bot/main.go 7-7 \"`` cmd/bot/main.go:7 ``\" code"}},
		{"bare path in inline code", "The registry is `internal/tools/registry.go`.",
			[]string{"internal/tools/registry.go 0-0 \"`internal/tools/registry.go`\" code"}},
		{"bare directory in inline code", "Tools live under `internal/tools/`.",
			[]string{"internal/tools/ 0-0 \"`internal/tools/`\" code"}},
		{"bare file name with extension in code", "Edit `go.mod` first.",
			[]string{"go.mod 0-0 \"`go.mod`\" code"}},
		{"bare path in prose is not a citation", "The file internal/tools/registry.go registers tools.", nil},
		{"bold", "**internal/llm/llm.go:10** declares Message.",
			[]string{`internal/llm/llm.go 10-10 "internal/llm/llm.go:10"`}},
		{"bold code", "**`internal/llm/llm.go:10`**",
			[]string{"internal/llm/llm.go 10-10 \"`internal/llm/llm.go:10`\" code"}},
		{"italic underscores", "_internal/llm/llm.go:10_",
			[]string{`internal/llm/llm.go 10-10 "internal/llm/llm.go:10"`}},
		{"dunder file", "__init__.py:3 imports it",
			[]string{`__init__.py 3-3 "__init__.py:3"`}},
		{"list and parentheses", "- the handler (internal/slackbot/bot.go:88)\n- the queue (internal/slackbot/queue.go:12-30);",
			[]string{`internal/slackbot/bot.go 88-88 "internal/slackbot/bot.go:88"`, `internal/slackbot/queue.go 12-30 "internal/slackbot/queue.go:12-30"`}},
		{"trailing colon", "At main.go:12: the server starts",
			[]string{`main.go 12-12 "main.go:12"`}},
		{"go compiler position", "./internal/x/x.go:12:5: undefined: foo",
			[]string{`./internal/x/x.go 12-12 "./internal/x/x.go:12:5"`}},
		{"go position in code", "`internal/x/x.go:12:5`",
			[]string{"internal/x/x.go 12-12 \"`internal/x/x.go:12:5`\" code"}},
		{"L form", "internal/x.go:L10-L20 and internal/y.go#L7 and internal/z.go#L3-L4 and internal/w.go#L3-9",
			[]string{`internal/x.go 10-20 "internal/x.go:L10-L20"`, `internal/y.go 7-7 "internal/y.go#L7"`, `internal/z.go 3-4 "internal/z.go#L3-L4"`, `internal/w.go 3-9 "internal/w.go#L3-9"`}},
		{"lines in words", "`internal/x.go` lines 10-20 and internal/y.go line 7, and `a/b.go` (lines 3–4).",
			[]string{"internal/x.go 10-20 \"`internal/x.go` lines 10-20\" code", `internal/y.go 7-7 "internal/y.go line 7"`, "a/b.go 3-4 \"`a/b.go` (lines 3–4)\" code"}},
		{"unclosed parenthesis is not a range", "`a/b.go` (lines 3-4 and more",
			[]string{"a/b.go 0-0 \"`a/b.go`\" code"}},
		{"extensionless well-known file", "Makefile:12 and Dockerfile:3",
			[]string{`Makefile 12-12 "Makefile:12"`, `Dockerfile 3-3 "Dockerfile:3"`}},
		{"dotfiles", ".github/workflows/ci.yml:5 and .gitignore:2",
			[]string{`.github/workflows/ci.yml 5-5 ".github/workflows/ci.yml:5"`, `.gitignore 2-2 ".gitignore:2"`}},
		{"unicode path", "docs/café/überblick.md:3",
			[]string{`docs/café/überblick.md 3-3 "docs/café/überblick.md:3"`}},
		{"urls are not citations", "Served on http://localhost:8080/internal/x.go:12 and <https://github.com/a/b/blob/main/x.go#L3>.", nil},
		{"host and port", "Connect to localhost:8080, db.internal:5432 or example.com:443.", nil},
		{"times", "The job runs at 10:30 and 23:59:59 daily.", nil},
		{"ipv6", "Listen on [::1]:8080 or fe80::1:443.", nil},
		{"windows paths", `C:\src\app\main.go:12 and C:/src/app/main.go:12 and D:\x.go`, nil},
		{"scp remote", "Clone git@github.com:acme/payments.git first.", nil},
		{"version numbers", "Upgrade from v1.2.3:4 to 1.2:3.", nil},
		{"home directory", "~/.config/app.yaml:3", nil},
		{"command in code is not a citation", "Run `go test ./internal/cite/...` and `grep -n foo x.go:12`.", nil},
		{"fenced block skipped", "Before a.go:1\n```go\n// see b.go:2\n```\nafter c.go:3",
			[]string{`a.go 1-1 "a.go:1"`, `c.go 3-3 "c.go:3"`}},
		{"indented tilde fence skipped", "1. step\n   ~~~\n   d.go:4\n   ~~~\ne.go:5",
			[]string{`e.go 5-5 "e.go:5"`}},
		{"unclosed fence runs to the end", "f.go:6\n```\ng.go:7", []string{`f.go 6-6 "f.go:6"`}},
		{"link written by the model", "[internal/x.go:12](https://github.com/a/b/blob/abc/internal/x.go#L12)",
			[]string{`internal/x.go 12-12 "[internal/x.go:12](https://github.com/a/b/blob/abc/internal/x.go#L12)" linked dest=https://github.com/a/b/blob/abc/internal/x.go#L12`}},
		{"link with other text", "[the retry loop](https://example.com/x.go:12)", nil},
		{"link to a whole file", "[README.md](https://evil.example/x)",
			[]string{`README.md 0-0 "[README.md](https://evil.example/x)" linked dest=https://evil.example/x`}},
		{"image", "![a/b.go:1](<https://evil.example/p.png> \"t\")",
			[]string{`a/b.go 1-1 "![a/b.go:1](<https://evil.example/p.png> \"t\")" linked dest=https://evil.example/p.png`}},
		{"link text escaped", `[a/\_b\_.go:2](x)`, []string{`a/_b_.go 2-2 "[a/\\_b\\_.go:2](x)" linked dest=x`}},
		{"escaped backtick", "\\`a/b.go:1\\`", []string{`a/b.go 1-1 "a/b.go:1"`}},
		{"zero line", "x.go:0 is no line", nil},
		{"table rows", "| file | what |\n|---|---|\n| `a/b.go:3` | x |\n\nc/d.go:4",
			[]string{"a/b.go 3-3 \"`a/b.go:3`\" code table", `c/d.go 4-4 "c/d.go:4"`}},
		{"option-looking path", "`--output=x`, --output=/tmp/x.go:1", []string{`/tmp/x.go 1-1 "/tmp/x.go:1"`}},
		{"import path in code", "It uses `net/http` and `github.com/slack-go/slack`.",
			[]string{"net/http 0-0 \"`net/http`\" code", "github.com/slack-go/slack 0-0 \"`github.com/slack-go/slack`\" code"}},
		{"go selector in code is not a path", "Call `os.Root` or `tools.Registry`.", nil},
		{"crlf", "a/b.go:1\r\nc/d.go:2\r\n", []string{`a/b.go 1-1 "a/b.go:1"`, `c/d.go 2-2 "c/d.go:2"`}},
		// Code is read as the Slack renderer reads it (mdscan): a code span
		// binds tighter than a bare URL and than a link's brackets, and text
		// with a backtick is no flag of Rewrite's.
		{"code span after a URL", "see http://h.example/a`x/y.go:1` or http://h.example/b`c/d.go:2",
			[]string{"x/y.go 1-1 \"`x/y.go:1`\" code"}},
		{"code span over a link's bracket", "[`](u) a/b.go:1 `", nil},
		{"code span in a link's text", "[`]` a/b.go:1](u) c/d.go:2", []string{`c/d.go 2-2 "c/d.go:2"`}},
		{"backtick in what looks like a flag", " ⚠️ _(`)_ a/b.go:1 ` c/d.go:2", []string{`c/d.go 2-2 "c/d.go:2"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := Find(tt.md)
			var got []string
			for _, c := range cs {
				got = append(got, short(c))
				if c.Offset < 0 || c.Offset+len(c.Raw) > len(tt.md) || tt.md[c.Offset:c.Offset+len(c.Raw)] != c.Raw {
					t.Errorf("Offset %d does not hold Raw %q", c.Offset, c.Raw)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find(%q) mismatch (-want +got):\n%s", tt.md, diff)
			}
		})
	}
}

func TestFindRealisticAnswer(t *testing.T) {
	md := strings.Join([]string{
		"## How retries work",
		"",
		"Requests are retried by `Client.Do` in **`internal/retry/retry.go:40-80`**:",
		"",
		"1. It builds the request (internal/retry/request.go:12).",
		"2. It waits with backoff; see `internal/retry/backoff.go` lines 5-9.",
		"",
		"```go",
		"for attempt := 0; attempt < 3; attempt++ { // internal/retry/retry.go:55",
		"```",
		"",
		"Configured at 10:30 via https://example.com:8443/docs, tests in internal/retry/retry_test.go:1-200.",
	}, "\n")
	var got []string
	for _, c := range Find(md) {
		got = append(got, c.String())
	}
	want := []string{
		"internal/retry/retry.go:40-80",
		"internal/retry/request.go:12",
		"internal/retry/backoff.go:5-9",
		"internal/retry/retry_test.go:1-200",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
