package render

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/cite"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden/*.json from the current rendering")

// goldenJSON renders messages as reviewers read them: per message the
// fallback text and the blocks exactly as slack-go marshals them for the
// "blocks" form field (json.Marshal of the []slack.Block), indented.
func goldenJSON(t testing.TB, msgs []Outgoing) []byte {
	t.Helper()
	type msg struct {
		Text   string          `json:"text"`
		Blocks json.RawMessage `json:"blocks"`
	}
	var out []msg
	for _, m := range msgs {
		blocks, err := json.Marshal(m.Blocks)
		if err != nil {
			t.Fatalf("marshal blocks: %v", err)
		}
		out = append(out, msg{Text: m.Text, Blocks: blocks})
	}
	compact, err := json.Marshal(out)
	if err != nil {
		t.Fatalf("marshal messages: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		t.Fatalf("indent: %v", err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

func checkGolden(t *testing.T, name string, msgs []Outgoing) {
	t.Helper()
	got := goldenJSON(t, msgs)
	path := filepath.Join("testdata", "golden", name+".json")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (regenerate with go test ./internal/slackbot/render -run Golden -update): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got); if the change is intended, rerun with -update and review the diff:\n%s", path, diff)
	}
}

// longAnswer is an answer far over one message: prose, then a Go file of
// about 20,000 characters in one fence, then a closing paragraph.
func longAnswer() string {
	var b strings.Builder
	b.WriteString("## How retries work\n\nThe client retries idempotent calls. Here is the whole file:\n\n```go\npackage retry\n\n")
	for i := range 400 {
		fmt.Fprintf(&b, "func step%03d(ctx context.Context) error { return do(ctx, %d) } // attempt %d\n", i, i, i)
	}
	b.WriteString("```\n\nThat is all: **every** call goes through `do`.\n")
	return b.String()
}

// readInput reads a Markdown input kept next to the golden files.
func readInput(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGolden(t *testing.T) {
	stop := ProgressOptions{StopActionID: "askrepo_stop", StopValue: "turn-42", Status: "Working…"}
	eleven := []CallLine{
		{Name: "list_files", Brief: `.`, State: CallOK, Summary: "23 entries"},
		{Name: "read_file", Brief: `README.md`, State: CallOK, Summary: "120 lines"},
		{Name: "read_file", Brief: `go.mod`, State: CallOK, Summary: "14 lines"},
		{Name: "list_files", Brief: `internal (recursive)`, State: CallOK, Summary: "61 entries"},
		{Name: "search_code", Brief: `"retry" in internal/ (*.go)`, State: CallOK, Summary: "17 matches in 5 files"},
		{Name: "search_code", Brief: `"Backoff" ignore_case`, State: CallOK, Summary: "4 matches"},
		{Name: "read_file", Brief: `internal/retry/retry.go:40-80`, State: CallOK, Summary: "41 lines", URL: "https://github.com/acme/app/blob/abc1234/internal/retry/retry.go#L40-L80"},
		{Name: "read_file", Brief: `internal/retry/retry_test.go`, State: CallRunning},
		{Name: "glob", Brief: `"**/*_test.go" in internal`, State: CallRunning},
		{Name: "read_file", Brief: `../../etc/passwd`, State: CallFailed, Summary: "outside the workspace"},
		{Name: "read_file", Brief: `{"path": "docs/`, State: CallFailed, Summary: "arguments are not valid JSON"},
	}
	cases := []struct {
		name string
		msgs []Outgoing
	}{
		{"progress_few_calls", ProgressMessages([]CallLine{
			{Name: "read_file", Brief: `README.md`, State: CallOK, Summary: "120 lines"},
			{Name: "search_code", Brief: `"retry" in internal/ (*.go)`, State: CallRunning},
			{Name: "read_file", Brief: `/etc/passwd`, State: CallFailed, Summary: "outside the workspace"},
		}, stop)},
		{"progress_eleven_calls", ProgressMessages(eleven, stop)},
		{"progress_done_no_button", ProgressMessages(eleven[:3], ProgressOptions{})},
		{"answer_formatting", AnswerMessages(readInput(t, "answer_formatting.md"), Footer{Steps: 3, ToolCalls: 5, PromptTokens: 12345, CachedTokens: 9100, CompletionTokens: 410, Duration: 8200 * time.Millisecond}, "https://github.com/acme/app")},
		{"answer_hostile_links", AnswerMessages(citeAnswer(t, readInput(t, "answer_hostile_links.md")), Footer{Repo: "acme/app", Commit: goldenSHA}, "https://github.com/acme/app")},
		{"answer_long_split", AnswerMessages(longAnswer(), Footer{Steps: 2, ToolCalls: 1, PromptTokens: 25000, CompletionTokens: 6100, Duration: 42 * time.Second})},
		{"answer_mentions", AnswerMessages("Hey <!channel> and <!here>, <@U123ABC> asked in <#C0123|general>; ping <!subteam^S42> too.\n\nCode stays: `if a < b && c > d {}` and `<div>`.", Footer{})},
		{"answer_footer", AnswerMessages("Done.", Footer{
			Steps: 25, ToolCalls: 31, PromptTokens: 1_234_567, CachedTokens: 987_000, CompletionTokens: 2048,
			ThreadPromptTokens: 2_500_000, ThreadCachedTokens: 2_000_000, ThreadCompletionTokens: 5300,
			Duration: 125 * time.Second, Repo: "acme/app", Commit: "abc1234def5678", Note: "stopped after 25 steps",
		})},
		{"error_message", []Outgoing{ErrorMessage("The model did not answer in time; try a narrower question.", "a1b2c3")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGolden(t, c.name, c.msgs) })
	}
}

func TestCallText(t *testing.T) {
	cases := []struct {
		name string
		line CallLine
		want string
	}{
		{"running", CallLine{Name: "read_file", Brief: `README.md`, State: CallRunning},
			"⏺ *read_file*  `README.md`  ⏳"},
		{"ok", CallLine{Name: "read_file", Brief: `README.md`, State: CallOK, Summary: "120 lines"},
			"⏺ *read_file*  `README.md`  ✓ 120 lines"},
		{"ok without summary", CallLine{Name: "read_file", Brief: `a`, State: CallOK},
			"⏺ *read_file*  `a`  ✓"},
		{"failed", CallLine{Name: "read_file", Brief: `/etc/passwd`, State: CallFailed, Summary: "outside the workspace"},
			"⏺ *read_file*  `/etc/passwd`  ✗ outside the workspace"},
		{"failed without summary", CallLine{Name: "x", State: CallFailed},
			"⏺ *x*  ✗ failed"},
		{"linked", CallLine{Name: "read_file", Brief: `a.go`, State: CallOK, Summary: "3 lines", URL: "https://h/a.go#L1-L3"},
			"⏺ *read_file*  <https://h/a.go#L1-L3|a.go>  ✓ 3 lines"},
		{"backtick in args", CallLine{Name: "search_code", Brief: "\"`x`\"", State: CallRunning},
			"⏺ *search_code*  `\"ˋxˋ\"`  ⏳"},
		{"a name over lines cannot forge a line", CallLine{Name: "read_file\n⏺ *approve_release*  ✓ approved", State: CallOK, Summary: "3 lines"},
			"⏺ *read_file ⏺ approve_release ✓ approved*  ✓ 3 lines"},
		{"mention in summary and args escaped", CallLine{Name: "read_file", Brief: `<!channel>`, State: CallFailed, Summary: "no <@U1> & <!here>\nsecond line"},
			"⏺ *read_file*  `&lt;!channel&gt;`  ✗ no &lt;@U1&gt; &amp; &lt;!here&gt; second line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := callText(c.line); got != c.want {
				t.Errorf("callText() = %q, want %q", got, c.want)
			}
		})
	}
}

func TestCallTextFitsTextObject(t *testing.T) {
	got := callText(CallLine{Name: strings.Repeat("n", 5000), Brief: strings.Repeat("a", 5000), State: CallFailed, Summary: strings.Repeat("é ", 5000)})
	if n := textLen(got); n > 500 {
		t.Errorf("call line is %d characters; name, args and summary should each be clipped", n)
	}
}

func TestProgressMessagesSplitsAtBlockLimit(t *testing.T) {
	var lines []CallLine
	for i := range 120 {
		lines = append(lines, CallLine{Name: "read_file", Brief: fmt.Sprintf("f%03d.go", i), State: CallOK, Summary: "1 line"})
	}
	msgs := ProgressMessages(lines, ProgressOptions{StopActionID: "askrepo_stop", StopValue: "t1", Status: "Working…"})
	if len(msgs) != 3 {
		t.Fatalf("got %d messages for 120 calls, want 3 (48 + 49 + 23)", len(msgs))
	}
	var seen []string
	for i, m := range msgs {
		if len(m.Blocks) > maxBlocksPerMessage {
			t.Errorf("message %d has %d blocks, Slack allows %d", i, len(m.Blocks), maxBlocksPerMessage)
		}
		if textLen(m.Text) > maxFallbackChars || m.Text == "" {
			t.Errorf("message %d fallback text is %d characters", i, textLen(m.Text))
		}
		ids := map[string]bool{}
		for j, b := range m.Blocks {
			if ids[b.ID()] {
				t.Errorf("message %d repeats block_id %q", i, b.ID())
			}
			ids[b.ID()] = true
			switch blk := b.(type) {
			case *slack.ContextBlock:
				if blk.BlockID == StatusBlockID {
					if i != 0 || j != 0 {
						t.Errorf("status line in message %d block %d, want first block of the first message", i, j)
					}
					continue
				}
				if n := len(blk.ContextElements.Elements); n != 1 {
					t.Errorf("context block has %d elements, want one per call", n)
				}
				seen = append(seen, blk.ContextElements.Elements[0].(*slack.TextBlockObject).Text)
			case *slack.ActionBlock:
				if i != len(msgs)-1 || j != len(m.Blocks)-1 {
					t.Errorf("Stop button in message %d block %d, want only the last block of the last message", i, j)
				}
			}
		}
	}
	if len(seen) != len(lines) {
		t.Fatalf("rendered %d call lines, want %d", len(seen), len(lines))
	}
	for i, l := range lines {
		if want := callText(l); seen[i] != want {
			t.Errorf("call %d rendered as %q, want %q (order must be kept)", i, seen[i], want)
		}
	}
}

func TestProgressMessagesWithoutCalls(t *testing.T) {
	msgs := ProgressMessages(nil, ProgressOptions{StopActionID: "askrepo_stop", StopValue: "t1"})
	if len(msgs) != 1 {
		t.Fatalf("got %d messages, want 1", len(msgs))
	}
	if msgs[0].Text == "" {
		t.Error("fallback text is empty; Slack rejects a message without text or blocks and notifications show nothing")
	}
	if len(msgs[0].Blocks) != 1 || msgs[0].Blocks[0].BlockType() != slack.MBTAction {
		t.Errorf("blocks = %v, want just the Stop button", msgs[0].Blocks)
	}
}

func TestFooterText(t *testing.T) {
	cases := []struct {
		name string
		f    Footer
		want string
	}{
		{"issue example", Footer{Steps: 3, ToolCalls: 5, PromptTokens: 12345, CachedTokens: 9100, CompletionTokens: 410, Duration: 8200 * time.Millisecond},
			"3 steps · 5 tool calls · 12.3k tokens in (9.1k cached) · 410 out · 8.2s"},
		{"singular, no cache", Footer{Steps: 1, ToolCalls: 1, PromptTokens: 900, CompletionTokens: 1000, Duration: 400 * time.Millisecond},
			"1 step · 1 tool call · 900 tokens in · 1k out · 0.4s"},
		{"thread totals", Footer{Steps: 2, PromptTokens: 2000, CompletionTokens: 10, ThreadPromptTokens: 40100, ThreadCachedTokens: 30000, ThreadCompletionTokens: 1200},
			"2 steps · 2k tokens in · 10 out · thread: 40.1k in (30k cached), 1.2k out"},
		{"minutes, millions, repo, note", Footer{Steps: 25, PromptTokens: 1_250_000, CompletionTokens: 5, Duration: 125 * time.Second, Repo: "acme/app", Commit: "abc1234def", Note: "stopped after 25 steps"},
			"_stopped after 25 steps_ · 25 steps · 1.2M tokens in · 5 out · 2m05s · acme/app@abc1234"},
		{"escaped", Footer{Repo: "a<b>&c", Note: "<!channel>"},
			"_&lt;!channel&gt;_ · a&lt;b&gt;&amp;c"},
		{"commit only", Footer{Commit: "0123456789"}, "0123456"},
		{"checkout notes", Footer{Steps: 1, Repo: "app", Commit: "abc1234def", Note: "stopped after 1 step",
			Checkout: "uncommitted changes in cited files: lines may differ from abc1234; local commit abc1234 is not pushed; citations are checked but not linked"},
			"_stopped after 1 step_ · _uncommitted changes in cited files: lines may differ from abc1234; local commit abc1234 is not pushed; citations are checked but not linked_ · 1 step · app@abc1234"},
		{"zero", Footer{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f.text(); got != c.want {
				t.Errorf("footer = %q, want %q", got, c.want)
			}
		})
	}
}

func TestAnswerMessagesLimits(t *testing.T) {
	huge := longAnswer() + "\n\n" + strings.Repeat("A paragraph of prose that goes on. ", 2000) + "\n\n```\n" + strings.Repeat("x", 30_000) + "\n```\n"
	msgs := AnswerMessages(huge, Footer{Steps: 1})
	if len(msgs) < 4 {
		t.Fatalf("got %d messages for %d characters, want at least 4", len(msgs), len(huge))
	}
	for i, m := range msgs {
		md, ok := m.Blocks[0].(*slack.MarkdownBlock)
		if !ok {
			t.Fatalf("message %d starts with %T, want a markdown block", i, m.Blocks[0])
		}
		if n := textLen(md.Text); n > maxMarkdownChars {
			t.Errorf("message %d markdown is %d characters, Slack allows %d per message", i, n, maxMarkdownChars)
		}
		if strings.Count(md.Text, "```")%2 != 0 {
			t.Errorf("message %d has an unbalanced code fence:\n%s", i, md.Text)
		}
		if m.Text == "" || textLen(m.Text) > maxFallbackChars {
			t.Errorf("message %d fallback text is %d characters, want 1..%d", i, textLen(m.Text), maxFallbackChars)
		}
		if strings.Count(m.Text, "```")%2 != 0 {
			t.Errorf("message %d fallback has an unbalanced code fence", i)
		}
		wantBlocks := 1
		if i == len(msgs)-1 {
			wantBlocks = 2
		}
		if len(m.Blocks) != wantBlocks {
			t.Errorf("message %d has %d blocks, want %d (footer only under the last part)", i, len(m.Blocks), wantBlocks)
		}
	}
}

func TestAnswerMessagesEmpty(t *testing.T) {
	for _, in := range []string{"", "\n\n", "   \n"} {
		msgs := AnswerMessages(in, Footer{})
		if len(msgs) != 1 {
			t.Fatalf("AnswerMessages(%q) gave %d messages, want 1", in, len(msgs))
		}
		if md := msgs[0].Blocks[0].(*slack.MarkdownBlock); md.Text != emptyAnswer || msgs[0].Text == "" {
			t.Errorf("AnswerMessages(%q) = %q / %q, want the empty-answer note in both", in, md.Text, msgs[0].Text)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	m := ErrorMessage("Could not read <!channel> & more.\nSecond line.", "ab12")
	if want := ":warning: Could not read &lt;!channel&gt; &amp; more. Second line. (ref: ab12)"; m.Text != want {
		t.Errorf("Text = %q, want %q", m.Text, want)
	}
	sec := m.Blocks[0].(*slack.SectionBlock)
	if want := ":warning: Could not read &lt;!channel&gt; &amp; more. Second line. _(ref: `ab12`)_"; sec.Text.Text != want {
		t.Errorf("block text = %q, want %q", sec.Text.Text, want)
	}
}

// BenchmarkAnswerMessages renders a 120,000-character answer: prose, a long
// Go fence and a minified line, the worst case the splitter sees.
func BenchmarkAnswerMessages(b *testing.B) {
	huge := longAnswer() + "\n\n" + strings.Repeat("A paragraph of prose that goes on. ", 2000) + "\n\n```\n" + strings.Repeat("x", 30_000) + "\n```\n"
	b.SetBytes(int64(len(huge)))
	for b.Loop() {
		AnswerMessages(huge, Footer{Steps: 1})
	}
}

// The running render (with the Stop button) and the final one (without)
// split the calls at the same places, so the final edit of a turn reaches
// every message that once carried the button.
func TestProgressMessagesSplitSameWithAndWithoutButton(t *testing.T) {
	for _, n := range []int{1, 48, 49, 50, 51, 97, 98, 99, 100, 147, 148, 149, 150, 195, 196, 197, 5000} {
		lines := make([]CallLine, n)
		for i := range lines {
			lines[i] = CallLine{Name: "read_file", Brief: fmt.Sprintf("f%d", i), State: CallOK}
		}
		running := ProgressMessages(lines, ProgressOptions{StopActionID: "askrepo_stop", StopValue: "t1"})
		final := ProgressMessages(lines, ProgressOptions{})
		if len(running) != len(final) {
			t.Errorf("%d calls: %d messages while running, %d when finished; want the same", n, len(running), len(final))
			continue
		}
		for i := range final {
			if got, want := len(final[i].Blocks), len(running[i].Blocks); i < len(final)-1 && got != want || i == len(final)-1 && got != want-1 {
				t.Errorf("%d calls, message %d: %d blocks finished, %d running; want the same calls in each", n, i, got, want)
			}
		}
	}
}

// goldenSHA is the commit the golden answers are checked at.
const goldenSHA = "0123456789abcdef0123456789abcdef01234567"

// fileChecker answers line counts from a map, as a checkout at goldenSHA.
type fileChecker map[string]int

func (f fileChecker) Lines(_ context.Context, p string) (int, error) {
	if n, ok := f[p]; ok {
		return n, nil
	}
	return 0, &fs.PathError{Op: "lines", Path: p, Err: fs.ErrNotExist}
}

// citeAnswer checks md's citations the way a lease does (see
// repos.Lease.Cite): README.md has 2 lines and main.go 10, .env is
// denied, and the web view is https://github.com/acme/app.
func citeAnswer(t *testing.T, md string) string {
	t.Helper()
	web := &cite.Web{Base: "https://github.com/acme/app", Kind: cite.KindGitHub}
	files := fileChecker{"README.md": 2, "main.go": 10, ".env": 1}
	hidden := cite.WithHidden(func(p string) bool { return p == ".env" })
	return cite.Rewrite(md, cite.Check(t.Context(), cite.Find(md), files, web, goldenSHA, hidden))
}

// Slack parses mentions in a mrkdwn text object unless it is verbatim, so
// a tool summary, file name or repository name holding a bare "@channel"
// would broadcast: every mrkdwn object we render is verbatim.
func TestMrkdwnObjectsAreVerbatim(t *testing.T) {
	var msgs []Outgoing
	msgs = append(msgs, ProgressMessages([]CallLine{
		{Name: "read_file", Brief: `@channel.md`, State: CallFailed, Summary: "no file @channel"},
		{Name: "list_files", Brief: `.`, State: CallOK, Summary: "@here", URL: "https://github.com/acme/app/tree/abc"},
	}, ProgressOptions{StopActionID: "askrepo_stop", StopValue: "t1", Status: "@everyone"})...)
	msgs = append(msgs, AnswerMessages("hi", Footer{Repo: "@channel", Note: "@here", Checkout: "@everyone"})...)
	msgs = append(msgs, ErrorMessage("could not read @channel", "ref1"))
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "mrkdwn" {
				n++
				if v["verbatim"] != true {
					t.Errorf("mrkdwn object not verbatim: %v", v)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, m := range msgs {
		js, err := json.Marshal(m.Blocks)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			t.Fatal(err)
		}
		walk(v)
	}
	if n < 5 {
		t.Errorf("found %d mrkdwn objects, want at least 5", n)
	}
	// The fallback text, which notifications show, is not a text object:
	// the bare words are broken there too.
	for _, m := range msgs {
		if broadcastRE.MatchString(m.Text) {
			t.Errorf("fallback text holds a bare broadcast: %q", m.Text)
		}
	}
}

var broadcastRE = regexp.MustCompile(`@(here|channel|everyone)`)

// A model that asks for thousands of calls in a turn gets them counted on
// one line past maxProgressMessages messages, not a thread flooded with
// messages (and edits of them) that bury the answer.
func TestProgressMessagesAreBounded(t *testing.T) {
	for _, status := range []string{"", "Working…"} {
		lines := make([]CallLine, 5000)
		for i := range lines {
			lines[i] = CallLine{Name: "read_file", Brief: fmt.Sprintf("f%d", i), State: CallState(i % 3)}
		}
		msgs := ProgressMessages(lines, ProgressOptions{StopActionID: "askrepo_stop", StopValue: "t1", Status: status})
		if len(msgs) != 4 {
			t.Fatalf("status %q: %d messages for 5000 calls, want 4", status, len(msgs))
		}
		calls := 0
		var last string
		for i, m := range msgs {
			if len(m.Blocks) > maxBlocksPerMessage {
				t.Errorf("message %d has %d blocks", i, len(m.Blocks))
			}
			for _, b := range m.Blocks {
				if c, ok := b.(*slack.ContextBlock); ok && c.BlockID != StatusBlockID {
					calls++
					last = c.ContextElements.Elements[0].(*slack.TextBlockObject).Text
				}
			}
		}
		shown := calls - 1
		if want := fmt.Sprintf("… and %d more tool calls", 5000-shown); !strings.HasPrefix(last, want) {
			t.Errorf("status %q: last line %q, want it to start %q", status, last, want)
		}
		if _, isButton := msgs[len(msgs)-1].Blocks[len(msgs[len(msgs)-1].Blocks)-1].(*slack.ActionBlock); !isButton {
			t.Errorf("status %q: the Stop button is not the last block", status)
		}
	}
}

// An answer longer than ten messages is cut, and the last message says so
// and how much was left out, rather than flooding the thread.
func TestAnswerMessagesAreBounded(t *testing.T) {
	md := strings.Repeat(strings.Repeat("word ", 200)+"\n\n", 1000) // about 1 MB
	msgs := AnswerMessages(md, Footer{Note: "stopped after 25 steps"})
	if len(msgs) != 10 {
		t.Fatalf("%d messages, want 10", len(msgs))
	}
	last := msgs[len(msgs)-1]
	ctx, ok := last.Blocks[len(last.Blocks)-1].(*slack.ContextBlock)
	if !ok {
		t.Fatalf("last block is %T, want the footer", last.Blocks[len(last.Blocks)-1])
	}
	ft := ctx.ContextElements.Elements[0].(*slack.TextBlockObject).Text
	if !strings.Contains(ft, "stopped after 25 steps") || !strings.Contains(ft, "more characters are not shown") {
		t.Errorf("footer = %q, want both notes", ft)
	}
}
