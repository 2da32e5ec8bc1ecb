package slackbot

import (
	"context"
	"errors"
	"testing"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/tools"
	"github.com/askrepo/askrepo/internal/turn"
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

// testTools are the tools of every test bot's turns, over a lease's
// workspace, as cmd/bot builds them (fewer of them).
func testTools(_ context.Context, l *repos.Lease, _ string) agent.Toolbox {
	ws := l.Workspace
	return tools.NewRegistry(tools.NewReadFile(ws, tools.Options{}), tools.NewListFiles(ws, tools.Options{}))
}

// idleTurns runs the turns of a bot whose test stops before any turn runs,
// over store: its model refuses every request.
func idleTurns(t testing.TB, store session.Store) *turn.Runner {
	t.Helper()
	r, err := turn.New(turn.Config{Store: store, Agent: agent.Config{Model: refusingModel{}}, Tools: testTools})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// refusingModel is a model that is never meant to be asked.
type refusingModel struct{}

func (refusingModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, errors.New("this test's model is not meant to be asked")
}
