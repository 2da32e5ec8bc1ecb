package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every tool keeps its output within the budget the registry gives it, so
// the registry never cuts the middle out of a page whose hint then skips
// what was cut. These tests run the tools through a registry, at the
// default limit and a small one, over content built to exceed both.

var pagingLimits = []int{DefaultOutputLimit, 8 << 10}

// runReg runs one call through r and fails the test if the registry had to
// cut the output.
func runReg(t *testing.T, r *Registry, name string, args any) Result {
	t.Helper()
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Run(t.Context(), Call{ID: "c", Name: name, Input: in})
	if strings.Contains(res.Content, "… [cut: lines ") {
		t.Fatalf("%s %s: the registry cut the output:\n%.400s", name, in, res.Content)
	}
	if res.IsError {
		t.Fatalf("%s %s: %s", name, in, res.Content)
	}
	return res
}

// longLine is line i of the long-lined file the paging tests read.
func longLine(i int) string {
	return fmt.Sprintf("%04d %s", i, strings.Repeat("abcdefghij", 5+i%30))
}

func longLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(longLine(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// numberedLine matches one line of a page: read_file's "N\t…" or
// git_blame's "N\tsha author date\t…".
var (
	readLineRE   = regexp.MustCompile(`^(\d+)\t(.*)$`)
	blameLineRE  = regexp.MustCompile(`^(\d+)\t[0-9a-f]{8} .*? \d{4}-\d{2}-\d{2}\t(.*)$`)
	readFooterRE = regexp.MustCompile(`^\[lines (\d+)–(\d+)[ ;].*continue with offset=(\d+)\]$`)
	blameNextRE  = regexp.MustCompile(`^\[continue with start=(\d+)\]$`)
)

// followPages reads pages from start on, following each page's hint, and
// checks that lines 1..total each come exactly once, in order, whole.
func followPages(t *testing.T, total int, page func(from int) string, lineRE, nextRE *regexp.Regexp) (pages int) {
	t.Helper()
	want := 1
	for from := 1; ; pages++ {
		if pages > total {
			t.Fatal("paging does not end")
		}
		out := page(from)
		next := 0
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if m := lineRE.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				if n != want {
					t.Fatalf("page from %d: line %d, want line %d", from, n, want)
				}
				if m[2] != longLine(n) {
					t.Fatalf("line %d = %q, want %q", n, m[2], longLine(n))
				}
				want++
				continue
			}
			if m := nextRE.FindStringSubmatch(l); m != nil {
				next, _ = strconv.Atoi(m[len(m)-1])
			}
		}
		if next == 0 {
			break
		}
		if next != want {
			t.Fatalf("page from %d says continue at %d, but it ended before line %d", from, next, want)
		}
		from = next
	}
	if want != total+1 {
		t.Errorf("pages reached line %d of %d", want-1, total)
	}
	return pages + 1
}

func TestReadFilePagesFitTheRegistry(t *testing.T) {
	dir := t.TempDir()
	wsWriteFiles(t, dir, map[string]string{"long.txt": longLines(2000)})
	ws := wsNew(t, dir, WorkspaceOptions{})
	for _, limit := range pagingLimits {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			r := NewRegistryWith(RegistryOptions{OutputLimit: limit}, NewReadFile(ws, Options{}))
			pages := followPages(t, 2000, func(from int) string {
				res := runReg(t, r, ReadFileName, map[string]any{"path": "long.txt", "offset": from})
				if len(res.Content) > limit {
					t.Fatalf("page of %d bytes, over the %d limit", len(res.Content), limit)
				}
				return res.Content
			}, readLineRE, readFooterRE)
			t.Logf("%d pages", pages)
		})
	}
}

func TestGitBlamePagesFitTheRegistry(t *testing.T) {
	repo := histFixture(t)
	histCommits(t, repo.dir, []histCommit{{who: carol, date: "2024-04-01T10:00:00+00:00", msg: "Add long lines",
		write: map[string]string{"long.txt": longLines(700)}}})
	ws := wsNew(t, repo.dir, WorkspaceOptions{})
	for _, limit := range pagingLimits {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			r := NewRegistryWith(RegistryOptions{OutputLimit: limit}, NewGitBlame(ws, Options{}))
			followPages(t, 700, func(from int) string {
				res := runReg(t, r, GitBlameName, map[string]any{"path": "long.txt", "start": from, "end": from + maxBlameLines - 1})
				if len(res.Content) > limit {
					t.Fatalf("page of %d bytes, over the %d limit", len(res.Content), limit)
				}
				first, _, _ := strings.Cut(res.Content, "\n")
				if !strings.Contains(first, fmt.Sprintf(", lines %d–", from)) {
					t.Fatalf("header %q does not start at line %d", first, from)
				}
				return res.Content
			}, blameLineRE, blameNextRE)
		})
	}
}

// The lists (search matches, commits, files) stop at a whole entry, and
// what they say they show is what they show.
func TestListsFitTheRegistry(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	long := strings.Repeat("very_long_directory_name_", 8)
	for i := range 300 {
		files[fmt.Sprintf("%s/file_%03d_%s.go", long, i, strings.Repeat("x", 100))] = "package p\n// before\nfunc Needle() {}\n// after\n"
	}
	wsWriteFiles(t, dir, files)
	ws := wsNew(t, dir, WorkspaceOptions{})
	for _, limit := range pagingLimits {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			r := NewRegistryWith(RegistryOptions{OutputLimit: limit}, NewSearchCode(ws, Options{}), NewListFiles(ws, Options{}), NewGlob(ws, Options{}))

			res := runReg(t, r, SearchCodeName, map[string]any{"pattern": "Needle", "context": 1, "max_results": 500})
			shown := strings.Count(res.Content, ": func Needle() {}\n")
			want := fmt.Sprintf("300 matches in 300 files (showing %d)\n", shown)
			if !strings.HasPrefix(res.Content, want) || !strings.Contains(res.Content, fmt.Sprintf("Showing %d of 300 matches (cut at the output size limit)", shown)) {
				t.Errorf("search output does not say it shows the %d matches it shows:\n%.300s\n…\n%s", shown, res.Content, res.Content[max(0, len(res.Content)-300):])
			}
			checkFits(t, res.Content, limit)

			res = runReg(t, r, ListFilesName, map[string]any{"path": long})
			listed := strings.Count(res.Content, ".go\n")
			if !strings.Contains(res.Content, fmt.Sprintf("… %d of 300 shown;", listed)) {
				t.Errorf("listing does not say it shows the %d entries it shows:\n%s", listed, res.Content[max(0, len(res.Content)-300):])
			}
			checkFits(t, res.Content, limit)

			res = runReg(t, r, GlobName, map[string]any{"pattern": "*.go"})
			listed = strings.Count(res.Content, ".go\n")
			if !strings.Contains(res.Content, fmt.Sprintf("… %d of 300 shown;", listed)) {
				t.Errorf("glob does not say it shows the %d names it shows:\n%s", listed, res.Content[max(0, len(res.Content)-300):])
			}
			checkFits(t, res.Content, limit)
		})
	}
}

func checkFits(t *testing.T, out string, limit int) {
	t.Helper()
	if len(out) > limit {
		t.Errorf("output of %d bytes, over the %d limit", len(out), limit)
	}
}

// gitFastImport adds commits with the given messages (and no files) to a
// new repository in dir, oldest first.
func gitFastImport(t *testing.T, dir string, messages []string) {
	t.Helper()
	histGit(t, dir, nil, "init", "-q")
	var s strings.Builder
	for i, msg := range messages {
		fmt.Fprintf(&s, "commit refs/heads/main\ncommitter Alice Example <alice@example.com> %d +0000\ndata %d\n%s\n", 1700000000+i*60, len(msg), msg)
	}
	histGitIn(t, dir, s.String(), "fast-import", "--quiet")
	histGit(t, dir, nil, "checkout", "-q", "main")
}

func TestGitLogAndShowFitTheRegistry(t *testing.T) {
	dir := t.TempDir()
	var msgs []string
	for i := range 120 {
		msgs = append(msgs, fmt.Sprintf("Commit %03d %s\n\n%s", i, strings.Repeat("subject ", 100), strings.Repeat("A long body line.\n", 4000)))
	}
	gitFastImport(t, dir, msgs)
	ws := wsNew(t, dir, WorkspaceOptions{})
	for _, limit := range pagingLimits {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			r := NewRegistryWith(RegistryOptions{OutputLimit: limit}, NewGitLog(ws, Options{}), NewGitShow(ws, Options{}))
			res := runReg(t, r, GitLogName, map[string]any{"limit": 100})
			var n int
			if _, err := fmt.Sscanf(res.Content, "%d commits", &n); err != nil {
				t.Fatalf("header of %q: %v", res.Content[:80], err)
			}
			if got := strings.Count(res.Content, "\tCommit "); got != n {
				t.Errorf("header says %d commits, %d listed", n, got)
			}
			if n < 100 && !strings.Contains(res.Content, fmt.Sprintf("[%d more of the 100 asked for did not fit the output limit, from ", 100-n)) {
				t.Errorf("no note on the %d commits left out:\n%s", 100-n, res.Content[max(0, len(res.Content)-300):])
			}
			checkFits(t, res.Content, limit)

			res = runReg(t, r, GitShowName, map[string]any{})
			if !strings.Contains(res.Content, "[message and file list cut at ") {
				t.Errorf("git_show does not say the message was cut:\n%s", res.Content[max(0, len(res.Content)-300):])
			}
			checkFits(t, res.Content, limit)
		})
	}
}

// The registry tells a tool the limit it will hold it to.
func TestRegistryGivesTheOutputBudget(t *testing.T) {
	tool := fakeTool{name: "t", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		return strconv.Itoa(OutputBudget(ctx)), nil
	}}
	if got := NewRegistryWith(RegistryOptions{OutputLimit: 5000}, tool).Run(t.Context(), Call{Name: "t"}).Content; got != "5000" {
		t.Errorf("budget = %s, want 5000", got)
	}
	if got := OutputBudget(t.Context()); got != DefaultOutputLimit {
		t.Errorf("budget outside a registry = %d, want %d", got, DefaultOutputLimit)
	}
}
