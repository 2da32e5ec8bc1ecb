package slackbot

import (
	"context"
	"testing"

	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/tools"
)

// testRepoName is the repository every test bot serves, in every channel
// and DM, as the one-repository setup of REPO_PATH does.
const testRepoName = "acme-widget"

// newTestRepos is the repositories of a test bot, built as production
// builds them: a repos.Manager over a path repository, here one commit of
// files (a README when none) in a temp dir, made with the fixed identity and date of the git
// fixture kit so its commit is the same on every run.
func newTestRepos(t testing.TB, files map[string]string) *repos.Manager {
	t.Helper()
	if len(files) == 0 {
		files = map[string]string{"README.md": "# widget\n"}
	}
	r := gitexectest.Init(t, "")
	r.Commit(gitexectest.Commit{Message: "widget", Write: files})
	m, err := repos.New(context.Background(), []repos.Spec{repos.Single(testRepoName, r.Dir, nil)}, repos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// withAnswerer is a NewAnswerer that gives every checkout ans.
func withAnswerer(ans Answerer) func(*tools.Workspace) (Answerer, error) {
	return func(*tools.Workspace) (Answerer, error) { return ans, nil }
}
