package slackbot

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/index"
	"github.com/askrepo/askrepo/internal/repos"
)

// /healthz shows each repository's code index: its state, commit, files
// and age.
func TestHealthzShowsTheCodeIndex(t *testing.T) {
	r := gitexectest.Init(t, "")
	commit := r.Commit(gitexectest.Commit{Write: map[string]string{"README.md": "# widget\n", "main.go": "package main\n\nfunc main() {}\n"}})
	m, err := repos.New(context.Background(), []repos.Spec{repos.Single(testRepoName, r.Dir, nil)},
		repos.Options{DataDir: t.TempDir(), Indexer: index.Indexer{Options: index.Options{Ctags: "off"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	h := newHarness(t, harnessOpts{cfg: func(c *Config) { c.Repos = m }})
	ctx := h.ctx()
	var body string
	for !strings.Contains(body, `"state": "ready"`) {
		select {
		case <-ctx.Done():
			t.Fatalf("the index never showed ready: %s", body)
		case <-time.After(5 * time.Millisecond):
		}
		_, body = h.healthz()
	}
	var got struct {
		Repos []struct {
			Index struct {
				State      string `json:"state"`
				Commit     string `json:"commit"`
				Files      int    `json:"files"`
				AgeSeconds *int64 `json:"age_seconds"`
			} `json:"index"`
		} `json:"repos"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	ix := got.Repos[0].Index
	if ix.Commit != commit || ix.Files != 2 || ix.AgeSeconds == nil {
		t.Errorf("index in /healthz = %+v, want commit %s, 2 files, an age", ix, commit)
	}
}
