package slackbot

import (
	"context"
	"strings"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/repos"
)

// TestStreamedCardSourcesArePermalinks: a task card links what its call
// read, at the turn's commit, so a reader can open the very lines the
// answer rests on; a call that read nothing one can link has no source.
func TestStreamedCardSourcesArePermalinks(t *testing.T) {
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
