package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/repos"
)

// bot serve gives each repository a code index unless BOT_INDEX is off.
func TestServeIndexesRepositories(t *testing.T) {
	up, sha := newUpstream(t, map[string]string{"pay/retry.go": "package pay\n\nfunc Retry() {}\n"})
	model := newScriptModel(t, func(int, llmtest.Request) (llmtest.Reply, <-chan struct{}) { return answerMsg("ok"), nil })
	for _, tc := range []struct {
		name, setting string
		want          bool
	}{
		{"default", "", true},
		{"off", "repo:\n  index: off\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newRepoWorld(t, tc.setting+fmt.Sprintf("repos:\n  - name: payments\n    url: %s\n    channels: [C1]\n", up.URL), model)
			deadline := time.Now().Add(30 * time.Second)
			for {
				h := w.svc.core.repos.Health()[0]
				if !tc.want {
					if h.Index != nil {
						t.Errorf("index with BOT_INDEX off: %+v", h.Index)
					}
					return
				}
				if h.Index != nil && h.Index.State == repos.IndexReady {
					if h.Index.Commit != sha || h.Index.Files != 1 {
						t.Errorf("index = %+v, want commit %s and 1 file", h.Index, sha)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the index never got ready: %+v", h.Index)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
