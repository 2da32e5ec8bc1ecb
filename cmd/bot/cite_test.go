package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
)

// localClone clones up into a fresh directory, a local checkout with
// origin/main, and returns its path.
func localClone(t *testing.T, up upstream) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	gitexectest.Git(t, filepath.Dir(dir), "clone", "--quiet", up.URL, dir)
	return dir
}

// hostileLinks cites a secret as if it were code, links citations and
// prose to another host, and uses Slack's own link markup.
const hostileLinks = "Start at [README.md:1](https://evil.example/a), the key is in .env:7 " +
	"(compare nothere.env:7), and see [the docs](https://evil.example/docs) or <https://evil.example/x|main.go:1>."

// A Slack answer about a local checkout: a link labelled as a citation
// points at the permalink, a link elsewhere shows its host, Slack's link
// markup shows as text, a denied file reads like a missing one; once the
// checkout has a commit that was never pushed, nothing is linked and the
// footer says why.
func TestSlackAnswerCitationsAndLinks(t *testing.T) {
	up, sha := newUpstream(t, map[string]string{"README.md": "# app\n", "main.go": "package main\n", ".env": "TOKEN=x\n"})
	dir := localClone(t, up)
	model := newScriptModel(t, func(int, llmtest.Request) (llmtest.Reply, <-chan struct{}) { return answerMsg(hostileLinks), nil })
	w := newRepoWorld(t, fmt.Sprintf("repos:\n  - name: app\n    path: %s\n    web_url: https://github.com/acme/app\n    channels: [C1]\n", dir), model)

	root := w.mention("C1", "where do I start?", "")
	w.waitTurns(1)
	text := w.answer("C1", root).AllText()
	flag := "⚠️ _(not in repo@" + sha[:7] + ")_"
	for _, want := range []string{
		"[README.md:1](https://github.com/acme/app/blob/" + sha + "/README.md#L1)",
		".env:7 " + flag,
		"nothere.env:7 " + flag,
		"[the docs](https://evil.example/docs) (evil.example)",
		"<\u200bhttps://evil.example/x|main.go:1>",
		"app@" + sha[:7],
	} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "evil.example/a") || strings.Contains(text, "past the end") {
		t.Errorf("answer keeps a foreign citation link or tells a secret's length:\n%s", text)
	}

	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitexectest.Git(t, dir, "commit", "--quiet", "-am", "local")
	local := gitexectest.Git(t, dir, "rev-parse", "HEAD")
	root = w.mention("C1", "and now?", "")
	w.waitTurns(2)
	text = w.answer("C1", root).AllText()
	for _, want := range []string{
		"local commit " + local[:7] + " is not pushed; citations are checked but not linked",
		"app@" + local[:7],
	} {
		if !strings.Contains(text, want) {
			t.Errorf("answer at an unpushed commit lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "github.com/acme/app/blob/") {
		t.Errorf("answer at an unpushed commit links it:\n%s", text)
	}
}

// The terminal lists a streamed answer's citations under it: a denied file
// in the same words as a missing one, and the footer says when the
// checkout's commit is not pushed.
func TestAskLocalCheckoutCitations(t *testing.T) {
	up, _ := newUpstream(t, map[string]string{"README.md": "# app\n", ".env": "TOKEN=x\n"})
	dir := localClone(t, up)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitexectest.Git(t, dir, "add", "main.go")
	gitexectest.Git(t, dir, "commit", "--quiet", "-m", "local")
	local := gitexectest.Git(t, dir, "rev-parse", "HEAD")
	fake := newModel(t, nil, `{"content":"See main.go:1 and README.md:1; the key is in .env:7, not nothere.env:7."}`)
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeTestFile(t, cfgFile, fmt.Sprintf("repos:\n  - name: app\n    path: %s\n    web_url: https://github.com/acme/app\n    channels: [\"*\"]\n", dir))
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "BOT_CONFIG": cfgFile, "BOT_DATA_DIR": t.TempDir()})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "where is the key?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	want := "Citations, checked at " + local[:7] + ":\n" +
		"  ✓ main.go:1\n" +
		"  ✓ README.md:1\n" +
		"  ⚠ .env:7: not in repo@" + local[:7] + "\n" +
		"  ⚠ nothere.env:7: not in repo@" + local[:7] + "\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, out.String())
	}
	if note := " · local commit " + local[:7] + " is not pushed; citations are checked but not linked\n"; !strings.Contains(out.String(), note) {
		t.Errorf("footer lacks %q:\n%s", note, out.String())
	}
}
