package slackbot

import (
	"context"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// webRepos is the test repository with a web view and its commit pushed,
// so citations and tool calls link, and that commit.
func webRepos(t *testing.T) (*repos.Manager, string) {
	t.Helper()
	r := gitexectest.Init(t, "")
	commit := r.Commit(gitexectest.Commit{Message: "widget", Write: map[string]string{"README.md": "# widget\n"}})
	// The commit is pushed: only then is it on the web view to link.
	r.Git("update-ref", "refs/remotes/origin/main", commit)
	spec := repos.Single(testRepoName, r.Dir, nil)
	spec.WebURL, spec.WebKind = "https://github.com/acme/widget", "github"
	m, err := repos.New(context.Background(), []repos.Spec{spec}, repos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, commit
}

// TestStreamedCardSourcesArePermalinks: a task card links what its call
// read, at the turn's commit, so a reader can open the very lines the
// answer rests on; a call that read nothing one can link has no source.
func TestStreamedCardSourcesArePermalinks(t *testing.T) {
	m, commit := webRepos(t)
	h := newHarness(t, streamed(readThenAnswer, func(c *Config) { c.Repos = m }))
	root := h.mention("C1", "what is this", "")
	h.waitTurns(1)
	tasks := streams(h.slack.Snapshot(), root)[0].Tasks()
	if len(tasks) != 2 {
		t.Fatalf("task cards %+v, want two", tasks)
	}
	want := "https://github.com/acme/widget/blob/" + commit + "/README.md"
	if s := tasks[0].Sources; len(s) != 1 || s[0]["url"] != want || s[0]["type"] != "url" || s[0]["text"] == "" {
		t.Errorf("read_file card sources %v, want one url source %s", s, want)
	}
	for _, tk := range tasks {
		for _, s := range tk.Sources {
			if u, _ := s["url"].(string); !strings.Contains(u, "/"+commit) {
				t.Errorf("card %q links %q, not at the turn's commit %s", tk.Title, u, commit)
			}
		}
	}
}

// TestStreamedCitationWaitsForItsLine: while the model is in the middle
// of a line that cites code, Slack shows the answer only up to the
// boundary before it; the line appears once whole, its citation checked
// and linked at the turn's commit, never as text that could have been
// a link to anything; a link off the repository shows its host as
// in a posted answer.
func TestStreamedCitationWaitsForItsLine(t *testing.T) {
	m, commit := webRepos(t)
	hold := newGate()
	t.Cleanup(hold.open)
	script := func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "The title.\n\nSee `README.md:1` and [the docs](https://evil.exa",
			Wait: hold.c(), WaitAfterText: true, After: "mple/x) for it.\n"}
	}
	h := newHarness(t, streamed(script, func(c *Config) { c.Repos = m }))
	root := h.mention("C1", "q", "")
	st, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		ms := streams(st, root)
		return len(ms) == 1 && ms[0].MarkdownText != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := streams(st, root)[0].MarkdownText; got != "The title." {
		t.Errorf("while the line is unfinished Slack shows %q, want only the paragraph before it", got)
	}
	hold.open()
	h.waitTurns(1)
	got := streamedText(streams(h.slack.Snapshot(), root))
	link := "https://github.com/acme/widget/blob/" + commit + "/README.md#L1"
	if !strings.HasPrefix(got, "The title.") || !strings.Contains(got, "[README.md:1]("+link+")") ||
		!strings.Contains(got, "(https://evil.example/x) (evil.example)") {
		t.Errorf("streamed answer %q, want the citation linked to %s and the link off the repository showing its host", got, link)
	}
}

// TestStreamStartsWithTheTurn: the streamed message, for the asker, and
// Slack's stop control are there while the model has not yet replied at
// all, and nothing else is posted.
func TestStreamStartsWithTheTurn(t *testing.T) {
	hold := newGate()
	t.Cleanup(hold.open)
	script := func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if r.Last().Role == "user" {
			rep.Wait = hold.c() // the first model request hangs
		}
		return rep
	}
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "what is this", "")
	st, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		ms := streams(st, root)
		return len(ms) == 1 && len(st.Sessions) == 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if m := streams(st, root)[0]; !m.Streaming || m.Recipient != "U1" || m.MarkdownText != "" {
		t.Errorf("streamed message while the model thinks: streaming %v, recipient %q, text %q", m.Streaming, m.Recipient, m.MarkdownText)
	}
	if s := st.Sessions[0].Status; s != "processing" {
		t.Errorf("agent session %q while the turn runs, want processing", s)
	}
	if n := len(st.CallsTo("chat.postMessage")); n != 0 {
		t.Errorf("%d chat.postMessage calls while the model thinks; the stream is the whole turn", n)
	}
	hold.open()
	if lines := h.waitTurns(1); lines[0]["outcome"] != outcomeAnswered {
		t.Errorf("outcome %v", lines[0]["outcome"])
	}
}
