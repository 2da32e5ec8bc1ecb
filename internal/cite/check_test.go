package cite

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// countingChecker records lookups, to show they are de-duplicated.
type countingChecker struct {
	files map[string]int
	calls []string
}

func (c *countingChecker) Lines(_ context.Context, p string) (int, error) {
	c.calls = append(c.calls, p)
	if p == "internal" {
		return 0, ErrIsDir
	}
	if n, ok := c.files[p]; ok {
		return n, nil
	}
	return 0, &fs.PathError{Op: "lines", Path: p, Err: fs.ErrNotExist}
}

func TestCheckAndRewrite(t *testing.T) {
	repo := newTestRepo(t)
	g, err := NewGitChecker(t.Context(), repo.dir, repo.first)
	if err != nil {
		t.Fatal(err)
	}
	web := &Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}
	blob := "https://github.com/acme/payments/blob/" + repo.first + "/"
	short := repo.first[:7]
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"valid line in prose", "See internal/a.go:3.",
			"See [internal/a.go:3](" + blob + "internal/a.go#L3)."},
		{"valid range in code span replaces the span", "See `internal/a.go:2-4` here.",
			"See [internal/a.go:2-4](" + blob + "internal/a.go#L2-L4) here."},
		{"whole file in code", "Read `./README.md`.",
			"Read [README.md](" + blob + "README.md)."},
		{"last line of a file without trailing newline", "README.md:2",
			"[README.md:2](" + blob + "README.md#L2)"},
		{"directory links to the tree", "Under `internal/`.",
			"Under [internal](https://github.com/acme/payments/tree/" + repo.first + "/internal)."},
		{"file added later is missing at this commit", "New code in internal/b.go:1.",
			"New code in internal/b.go:1 ⚠️ _(not in repo@" + short + ")_."},
		{"hallucinated path in code", "It is in `internal/payments/stripe.go:42`.",
			"It is in `internal/payments/stripe.go:42` ⚠️ _(not in repo@" + short + ")_."},
		{"hallucinated bare file in code", "See `internal/nope.go`.",
			"See `internal/nope.go` ⚠️ _(not in repo@" + short + ")_."},
		{"line past the end", "internal/a.go:999",
			"internal/a.go:999 ⚠️ _(line 999 is past the end: 10 lines)_"},
		{"range past the end", "`internal/a.go:8-12`",
			"`internal/a.go:8-12` ⚠️ _(lines 8-12 run past the end: 10 lines)_"},
		{"one-line file", "README.md:3", "README.md:3 ⚠️ _(line 3 is past the end: 2 lines)_"},
		{"empty file", "empty.txt:1", "empty.txt:1 ⚠️ _(line 1 is past the end: the file is empty)_"},
		{"backwards range", "internal/a.go:5-2", "internal/a.go:5-2 ⚠️ _(the range 5-2 runs backwards)_"},
		{"directory with a line", "internal/:3", "internal/:3 ⚠️ _(a directory, not a file)_"},
		{"dot-dot", "../../etc/passwd:1", "../../etc/passwd:1 ⚠️ _(not in repo@" + short + ")_"},
		{"import path is skipped", "Uses `net/http` and `github.com/slack-go/slack`.",
			"Uses `net/http` and `github.com/slack-go/slack`."},
		{"option-looking path", "`--output=x.go:1` and --upload-pack=touch/x.go:1",
			"`--output=x.go:1` ⚠️ _(not in repo@" + short + ")_ and --upload-pack=touch/x.go:1 ⚠️ _(not in repo@" + short + ")_"},
		{"label escaping", "internal/_gen_/x.go:4",
			"[internal/\\_gen\\_/x.go:4](" + blob + "internal/_gen_/x.go#L4)"},
		{"paths with spaces are not citations", "`docs/my notes.md:2`", "`docs/my notes.md:2`"},
		{"fenced code untouched", "```\ninternal/a.go:3 and internal/b.go:1\n```",
			"```\ninternal/a.go:3 and internal/b.go:1\n```"},
		{"table: flagged but not linked", "| f | w |\n|---|---|\n| `internal/a.go:3` | ok |\n| `internal/b.go:1` | new |",
			"| f | w |\n|---|---|\n| `internal/a.go:3` | ok |\n| `internal/b.go:1` ⚠️ _(not in repo@" + short + ")_ | new |"},
		{"model-written link to a missing file loses its destination", "[internal/b.go:1](https://example.com/x)",
			"`internal/b.go:1` ⚠️ _(not in repo@" + short + ")_"},
		{"model-written link that checks out points at the permalink", "[internal/a.go:1](https://evil.example/x)",
			"[internal/a.go:1](" + blob + "internal/a.go#L1)"},
		{"link to a whole file", "See [README.md](https://evil.example/readme).",
			"See [README.md](" + blob + "README.md)."},
		{"link with a title", `[README.md:1](https://evil.example/x "README.md at main")`,
			"[README.md:1](" + blob + "README.md#L1)"},
		{"relative link", "[README.md:1](README.md)", "[README.md:1](" + blob + "README.md#L1)"},
		{"link text in bold", "[**README.md:1**](https://evil.example/x) [_`README.md:2`_](https://evil.example/y)",
			"[README.md:1](" + blob + "README.md#L1) [README.md:2](" + blob + "README.md#L2)"},
		{"link text in code", "[`internal/a.go:3`](https://evil.example/x)", "[internal/a.go:3](" + blob + "internal/a.go#L3)"},
		{"link text with escapes", `[internal/\_gen\_/x.go:4](https://evil.example/x)`,
			"[internal/\\_gen\\_/x.go:4](" + blob + "internal/_gen_/x.go#L4)"},
		{"image becomes a link", "![README.md:1](https://evil.example/pixel.png)", "[README.md:1](" + blob + "README.md#L1)"},
		{"escaped bang is not an image", `\![README.md:1](https://evil.example/x)`, `\![README.md:1](` + blob + "README.md#L1)"},
		{"link past the end keeps the citation only", "[internal/a.go:999](https://evil.example/x)",
			"`internal/a.go:999` ⚠️ _(line 999 is past the end: 10 lines)_"},
		{"link citing another repository's file", "[other/lib/x.go:1](https://github.com/other/lib/blob/main/x.go#L1)",
			"`other/lib/x.go:1` ⚠️ _(not in repo@" + short + ")_"},
		{"link to a directory", "[internal/](https://evil.example/x)",
			"[internal](https://github.com/acme/payments/tree/" + repo.first + "/internal)"},
		{"import path link stays", "[net/http](https://pkg.go.dev/net/http)", "[net/http](https://pkg.go.dev/net/http)"},
		{"other link text stays", "[the retry loop](https://evil.example/x)", "[the retry loop](https://evil.example/x)"},
		{"go position", "./internal/a.go:3:7: unused", "[internal/a.go:3](" + blob + "internal/a.go#L3): unused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results := Check(t.Context(), Find(tt.in), g, web, repo.first)
			got := Rewrite(tt.in, results)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Rewrite mismatch (-want +got):\n%s", diff)
			}
			for _, name := range []string{"x.go", "touch"} {
				if _, err := os.Stat(filepath.Join(repo.dir, name)); err == nil {
					t.Errorf("a cited path made git write %s", name)
				}
			}
			again := Rewrite(got, Check(t.Context(), Find(got), g, web, repo.first))
			if again != got {
				t.Errorf("second Rewrite changed the text:\n%s\n→\n%s", got, again)
			}
		})
	}
}

func TestCheckWithoutWebValidatesButDoesNotLink(t *testing.T) {
	c := &countingChecker{files: map[string]int{"a/x.go": 10}}
	// A link the model wrote cannot be vouched for without a web view:
	// only its text is kept.
	in := "a/x.go:3 and a/x.go:30 [a/x.go:4](https://evil.example/x)"
	results := Check(t.Context(), Find(in), c, nil, "")
	got := Rewrite(in, results)
	want := "a/x.go:3 and a/x.go:30 ⚠️ _(line 30 is past the end: 10 lines)_ `a/x.go:4`"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if v, i := Summary(results); v != 2 || i != 1 {
		t.Errorf("Summary = %d, %d; want 2, 1", v, i)
	}
}

func TestCheckDeduplicatesLookups(t *testing.T) {
	c := &countingChecker{files: map[string]int{"a/x.go": 10}}
	in := "a/x.go:1, ./a/x.go:2, `a/x.go:3`, /a/x.go:4 and a/y.go:1, a/y.go:2"
	results := Check(t.Context(), Find(in), c, nil, "abc")
	if diff := cmp.Diff([]string{"a/x.go", "a/y.go"}, c.calls); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	if v, i := Summary(results); v != 4 || i != 2 {
		t.Errorf("Summary = %d, %d; want 4, 2", v, i)
	}
}

func TestCheckRepoNamePrefix(t *testing.T) {
	c := &countingChecker{files: map[string]int{"internal/x.go": 10, "payments/keep.go": 3}}
	web := &Web{Base: "https://github.com/acme/payments", Kind: KindGitHub}
	in := "payments/internal/x.go:2, payments/keep.go:1, acme/payments/internal/x.go:3"
	results := Check(t.Context(), Find(in), c, web, sha, WithRepoName("acme/payments"))
	var got []string
	for _, r := range results {
		got = append(got, r.Path+" "+strconv.FormatBool(r.Valid))
	}
	want := []string{"internal/x.go true", "payments/keep.go true", "internal/x.go true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	without := Check(t.Context(), Find(in), c, web, sha)
	if without[0].Valid {
		t.Error("without WithRepoName the prefixed path should not resolve")
	}
}

// failingChecker fails every lookup the way a timed-out git would.
type failingChecker struct{}

func (failingChecker) Lines(context.Context, string) (int, error) {
	return 0, context.DeadlineExceeded
}

func TestCheckFailureIsNeitherLinkedNorFlagged(t *testing.T) {
	in := "See internal/a.go:3 and `internal/b.go`."
	results := Check(t.Context(), Find(in), failingChecker{}, &Web{Base: "https://github.com/a/b", Kind: KindGitHub}, sha)
	for _, r := range results {
		if r.Valid || r.URL != "" || !errors.Is(r.Err, context.DeadlineExceeded) {
			t.Errorf("%s: Valid=%v URL=%q Err=%v; want unchecked", r.Path, r.Valid, r.URL, r.Err)
		}
	}
	if got := Rewrite(in, results); got != in {
		t.Errorf("Rewrite changed unchecked citations: %q", got)
	}
	if v, i := Summary(results); v != 0 || i != 0 {
		t.Errorf("Summary = %d, %d; want 0, 0", v, i)
	}
}

func TestRewriteIgnoresStaleResults(t *testing.T) {
	c := &countingChecker{files: map[string]int{"a/x.go": 10}}
	results := Check(t.Context(), Find("a/x.go:3"), c, &Web{Base: "https://github.com/a/b", Kind: KindGitHub}, sha)
	other := "nothing here at all"
	if got := Rewrite(other, results); got != other {
		t.Errorf("Rewrite applied a result to text it was not found in: %q", got)
	}
	if got := Rewrite("", results); got != "" {
		t.Errorf("Rewrite of empty text = %q", got)
	}
}

func TestContextLineLink(t *testing.T) {
	// A tool call's context line names a path and lines of its own; it is
	// checked and linked the same way.
	c := &countingChecker{files: map[string]int{"internal/retry/retry.go": 120}}
	web := &Web{Base: "https://github.com/acme/app", Kind: KindGitHub}
	r := Check(t.Context(), []Citation{{Path: "internal/retry/retry.go", Start: 40, End: 80}}, c, web, sha)[0]
	want := "https://github.com/acme/app/blob/" + sha + "/internal/retry/retry.go#L40-L80"
	if !r.Valid || r.URL != want {
		t.Errorf("got Valid=%v URL=%q, want %q", r.Valid, r.URL, want)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{"./internal/x.go", "internal/x.go", nil},
		{"/internal/x.go", "internal/x.go", nil},
		{".//./internal//x.go", "internal/x.go", nil},
		{"internal/./x.go", "internal/x.go", nil},
		{"internal/", "internal", nil},
		{"--output=x", "--output=x", nil},
		{"../x.go", "", ErrOutside},
		{"a/../../x.go", "", ErrOutside},
		{"a/b/../x.go", "", ErrOutside},
		{"a\nb", "", ErrInvalidPath},
		{"./", "", ErrInvalidPath},
	}
	for _, tt := range tests {
		got, err := Normalize(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) || (err != nil) != (tt.err != nil) {
			t.Errorf("Normalize(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestImportsNoInternalPackage keeps the package a leaf: callers hand it
// what it needs. gitexec, itself a leaf, is the one way to run git,
// mdscan, another, the one reading of Markdown's code that the renderer
// shares, and ctxio, a third, stops a file's read with its context.
func TestImportsNoInternalPackage(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "github.com/askrepo/") &&
				p != "github.com/askrepo/askrepo/internal/gitexec" && p != "github.com/askrepo/askrepo/internal/mdscan" &&
				p != "github.com/askrepo/askrepo/internal/ctxio" {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}

// TestCheckHiddenReadsAsMissing holds WithHidden's promise: a hidden path
// is never looked up, and its citation reads exactly like one of a path
// that is not there, with the line count of neither.
func TestCheckHiddenReadsAsMissing(t *testing.T) {
	c := &countingChecker{files: map[string]int{".env": 1, "secrets/db.yaml": 2, "a/x.go": 10}}
	hidden := func(p string) bool { return p == ".env" || strings.HasPrefix(p, "secrets/") }
	web := &Web{Base: "https://github.com/acme/app", Kind: KindGitHub}
	in := ".env:7 .env:1 secrets/db.yaml:9 a/x.go:3 gone.env:7 ../up.env:7"
	results := Check(t.Context(), Find(in), c, web, sha, WithHidden(hidden))
	if diff := cmp.Diff([]string{"a/x.go", "gone.env"}, c.calls); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	flag := " ⚠️ _(not in repo@" + sha[:7] + ")_"
	want := ".env:7" + flag + " .env:1" + flag + " secrets/db.yaml:9" + flag +
		" [a/x.go:3](https://github.com/acme/app/blob/" + sha + "/a/x.go#L3) gone.env:7" + flag + " ../up.env:7" + flag
	if got := Rewrite(in, results); got != want {
		t.Errorf("Rewrite:\n got %q\nwant %q", got, want)
	}
	for _, r := range results {
		if r.Path != "a/x.go" && (r.Exists || r.Lines != 0) {
			t.Errorf("%s: Exists=%v Lines=%d; a hidden path must tell nothing", r.Raw, r.Exists, r.Lines)
		}
	}
}
