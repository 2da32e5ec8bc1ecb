package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/gitexec/gitexectest"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
)

// These tests run the service as serve wires it (repositories from a
// BOT_CONFIG file, cloned from bare git repos by file:// URL; the real
// agent, store and Slack adapter) in this process, against the fake Slack
// and a scripted model server, so a test can push upstream and sync at
// chosen moments.

// upstream is the kit's bare file:// repository with a work tree to
// commit through.
type upstream struct{ *gitexectest.Remote }

func newUpstream(t *testing.T, files map[string]string) (upstream, string) {
	t.Helper()
	u := upstream{gitexectest.NewRemote(t)}
	return u, u.commit(files)
}

// commit writes files, commits and pushes main; it returns the commit's SHA.
func (u upstream) commit(files map[string]string) string {
	return u.Push("main", gitexectest.Commit{Write: files})
}

// newScriptModel starts a model (llmtest) whose replies come from a
// script given the request's number (from 1); a reply with a gate is held
// until the gate is closed, so a test can act while a turn waits on the
// model. Every reply reports 10 prompt tokens and 1 out.
func newScriptModel(t *testing.T, script func(n int, req llmtest.Request) (llmtest.Reply, <-chan struct{})) *llmtest.Server {
	return llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		rep, gate := script(r.N, r)
		rep.Wait = gate
		rep.Usage = &llmtest.Usage{Prompt: 10, Output: 1}
		return rep
	})
}

// toolCalls is an assistant message calling tools, each name and JSON args.
func toolCalls(calls ...[2]string) llmtest.Reply {
	var rep llmtest.Reply
	for i, c := range calls {
		rep.Calls = append(rep.Calls, llmtest.Call{ID: fmt.Sprintf("call_%d", i), Name: c[0], Args: c[1]})
	}
	return rep
}

func answerMsg(text string) llmtest.Reply { return llmtest.Reply{Content: text} }

// repoWorld is the service over the repos of a YAML file.
type repoWorld struct {
	t     *testing.T
	slack *slacktest.Server
	model *llmtest.Server
	svc   *service
	logs  *lockedBuffer
}

// newRepoWorld starts the service over reposYAML and model, in the
// message UI unless settings (applied last) say otherwise.
func newRepoWorld(t *testing.T, reposYAML string, model *llmtest.Server, settings ...map[string]string) *repoWorld {
	t.Helper()
	srv := slacktest.New()
	t.Cleanup(srv.Close)
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	if err := os.WriteFile(cfgFile, []byte(reposYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"SLACK_BOT_TOKEN": slacktest.DefaultBotToken,
		"SLACK_APP_TOKEN": slacktest.DefaultAppToken,
		"SLACK_API_URL":   srv.APIURL(),
		"BOT_SLACK_UI":    "messages",
		"OPENAI_API_KEY":  "sk-test",
		"OPENAI_BASE_URL": model.URL,
		"OPENAI_STREAM":   "false",
		"BOT_CONFIG":      cfgFile,
		"BOT_DATA_DIR":    t.TempDir(),
		"BOT_HTTP_ADDR":   "",
		"BOT_REPO_SYNC":   "1h", // the tests sync by hand
	}
	for _, m := range settings {
		maps.Copy(vars, m)
	}
	env := envMap(vars)
	cfg, err := config.Load(env, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &repoWorld{t: t, slack: srv, model: model, logs: &lockedBuffer{}}
	log := slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w.svc, err = newService(t.Context(), cfg, env, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.svc.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		w.svc.Close()
		if t.Failed() {
			t.Logf("service log:\n%s", w.logs.String())
		}
	})
	if err := srv.WaitConnected(w.ctx(), 1); err != nil {
		t.Fatalf("not connected: %v\n%s", err, w.logs.String())
	}
	return w
}

func (w *repoWorld) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	w.t.Cleanup(cancel)
	return ctx
}

func (w *repoWorld) mention(channel, text, thread string) string {
	return w.slack.Mention(channel, "U1", text, thread)
}

// waitTurns waits for n turn summary lines in the log.
func (w *repoWorld) waitTurns(n int) {
	w.t.Helper()
	ctx := w.ctx()
	for strings.Count(w.logs.String(), `"msg":"turn"`) < n {
		select {
		case <-ctx.Done():
			w.t.Fatalf("waiting for %d turns:\n%s", n, w.logs.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// answer is the last message of the bot in a thread with a markdown block.
func (w *repoWorld) answer(channel, root string) slacktest.Message {
	w.t.Helper()
	var last slacktest.Message
	for _, m := range w.slack.Snapshot().BotMessages(channel, root, slacktest.DefaultBotID) {
		if slices.Contains(m.BlockTypes(), "markdown") {
			last = m
		}
	}
	if last.TS == "" {
		w.t.Fatalf("no answer in %s/%s", channel, root)
	}
	return last
}

// replies is the text of every bot message in a thread.
func (w *repoWorld) replies(channel, root string) string {
	var b strings.Builder
	for _, m := range w.slack.Snapshot().BotMessages(channel, root, slacktest.DefaultBotID) {
		b.WriteString(m.AllText() + "\n")
	}
	return b.String()
}

// toolResults are the contents of the tool messages of request n (1-based).
func (w *repoWorld) toolResults(n int) []string {
	var out []string
	for _, m := range w.model.Requests()[n-1].Chat.Messages {
		if m.Role == "tool" {
			out = append(out, m.Content)
		}
	}
	return out
}

// A turn reads one commit from start to end: a push and a sync while the
// model is thinking change nothing for it (its tool results, citations and
// footer are of the old commit); the next turn reads the new commit, says
// so to the model, and links there. Citations of a file that is not there
// and of a line past the end are flagged and not linked; context lines
// link the file they read at the turn's commit.
func TestRepoTurnSeesOneCommit(t *testing.T) {
	up, first := newUpstream(t, map[string]string{
		"README.md":    "# payments\n",
		"pay/retry.go": "package pay\n\n// Retry tries 3 times.\nfunc Retry() {}\n",
	})
	hold := make(chan struct{})
	model := newScriptModel(t, func(n int, req llmtest.Request) (llmtest.Reply, <-chan struct{}) {
		switch n {
		case 1: // held while upstream moves
			return toolCalls([2]string{"read_file", `{"path":"pay/retry.go"}`}), hold
		case 2:
			return answerMsg("Retries are in pay/retry.go:3-4; the limit is in pay/limit.go:1, see also pay/retry.go:40."), nil
		case 3:
			return toolCalls([2]string{"read_file", `{"path":"pay/limit.go","offset":1,"limit":1}`}), nil
		default:
			return answerMsg("Now the limit is in pay/limit.go:1."), nil
		}
	})
	w := newRepoWorld(t, fmt.Sprintf(`repos:
  - name: payments
    url: %s
    web_url: https://github.com/acme/payments
    channels: [C1]
`, up.URL), model)

	root := w.mention("C1", "how are payments retried?", "")
	select {
	case <-model.Arrived():
	case <-w.ctx().Done():
		t.Fatal("no model request")
	}
	second := up.commit(map[string]string{
		"pay/retry.go": "package pay\n\n// Retry tries 5 times now.\nfunc Retry() {}\n",
		"pay/limit.go": "package pay\n",
	})
	if err := w.svc.core.repos.SyncNow(t.Context(), "payments"); err != nil {
		t.Fatal(err)
	}
	if h := w.svc.core.repos.Health(); h[0].Commit != second || h[0].Leases != 0 {
		// The running turn holds the old checkout; the new one is current.
		t.Fatalf("health after sync = %+v, want commit %s", h[0], second)
	}
	close(hold)
	w.waitTurns(1)

	if got := w.toolResults(2); len(got) != 1 || !strings.Contains(got[0], "tries 3 times") {
		t.Errorf("read_file during the turn = %q, want the old commit's text", got)
	}
	ans := w.answer("C1", root)
	text := ans.AllText()
	for _, want := range []string{
		"https://github.com/acme/payments/blob/" + first + "/pay/retry.go#L3-L4",
		"pay/limit.go:1 ⚠️ _(not in repo@" + first[:7] + ")_",
		"pay/retry.go:40 ⚠️ _(line 40 is past the end: 4 lines)_",
		"payments@" + first[:7],
	} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "pay/limit.go#") || strings.Contains(text, second) {
		t.Errorf("answer links the missing file or the new commit:\n%s", text)
	}
	if thread := w.replies("C1", root); !strings.Contains(thread, "<https://github.com/acme/payments/blob/"+first+"/pay/retry.go|") {
		t.Errorf("the read_file context line does not link the file at the turn's commit:\n%s", thread)
	}

	// The follow-up runs on the new commit and is told so.
	w.slack.Reply("C1", "U1", "and the limit?", root)
	w.waitTurns(2)
	reqs := model.Requests()
	if n := reqs[2].Has("user", fmt.Sprintf("(The checkout moved from %s to %s since the last answer.)", first[:7], second[:7])); n != 1 {
		t.Errorf("follow-up's request does not tell the model the checkout moved:\n%+v", reqs[2].Chat.Messages)
	}
	if n := reqs[0].Has("user", "commit: "+first); n != 1 {
		t.Errorf("first question lacks the commit in its preamble: %+v", reqs[0].Chat.Messages)
	}
	text = w.answer("C1", root).AllText()
	for _, want := range []string{
		"https://github.com/acme/payments/blob/" + second + "/pay/limit.go#L1",
		"payments@" + second[:7],
	} {
		if !strings.Contains(text, want) {
			t.Errorf("follow-up answer lacks %q:\n%s", want, text)
		}
	}
	if thread := w.replies("C1", root); !strings.Contains(thread, "<https://github.com/acme/payments/blob/"+second+"/pay/limit.go#L1|") {
		t.Errorf("the follow-up's context line does not link the lines read at the new commit:\n%s", thread)
	}
	if h := w.svc.core.repos.Health(); h[0].Leases != 0 {
		t.Errorf("leases held after the turns: %d", h[0].Leases)
	}
}

// A thread is bound to the repo its channel serves by default or the one
// its question names; a name the channel may not use gets the choices; a
// channel no repo serves is told the bot is not enabled, and none of that
// reaches the model. Permalinks take the shape of each repo's host, and
// /healthz shows every repo, one that never cloned included.
func TestRepoBinding(t *testing.T) {
	pay, paySHA := newUpstream(t, map[string]string{"pay/retry.go": "package pay\n\nfunc Retry() {}\n"})
	infra, infraSHA := newUpstream(t, map[string]string{"deploy/main.tf": "resource \"x\" \"y\" {}\n"})
	model := newScriptModel(t, func(n int, req llmtest.Request) (llmtest.Reply, <-chan struct{}) {
		q := req.Last().Content
		switch {
		case req.Last().Role == "user" && strings.Contains(q, "repository: infra"):
			return answerMsg("It is deployed by deploy/main.tf:1."), nil
		default:
			return answerMsg("Retry is at pay/retry.go:3."), nil
		}
	})
	w := newRepoWorld(t, fmt.Sprintf(`repos:
  - name: payments
    url: %s
    web_url: https://bitbucket.org/acme/payments
    channels: [C1]
  - name: infra
    url: %s
    web_url: https://gitlab.example.com/ops/infra
    web_kind: gitlab
    channels: [C1, C2]
  - name: ghost
    url: file:///nonexistent/ghost.git
    channels: [C9]
`, pay.URL, infra.URL), model)

	def := w.mention("C1", "where is retry?", "")
	named := w.mention("C1", "in infra: how is it deployed?", "")
	unknown := w.mention("C1", "in billing: what is this?", "")
	unmapped := w.mention("C3", "what is this?", "")
	w.waitTurns(3) // the unmapped channel is refused at intake, before any turn
	other := w.slack.NextTS()
	w.slack.SendEvent(slacktest.UserMessage("C1", "channel", "U1", "in payments: and retries?", other, named))
	w.waitTurns(4)
	down := w.mention("C9", "anything?", "")
	w.waitTurns(5)

	if got := w.answer("C1", def).AllText(); !strings.Contains(got, "https://bitbucket.org/acme/payments/src/"+paySHA+"/pay/retry.go#lines-3") || !strings.Contains(got, "payments@"+paySHA[:7]) {
		t.Errorf("default repo's answer:\n%s", got)
	}
	if got := w.answer("C1", named).AllText(); !strings.Contains(got, "https://gitlab.example.com/ops/infra/-/blob/"+infraSHA+"/deploy/main.tf#L1") || !strings.Contains(got, "infra@"+infraSHA[:7]) {
		t.Errorf("named repo's answer:\n%s", got)
	}
	for _, tc := range []struct {
		name, channel, root, want string
	}{
		{"unknown name", "C1", unknown, `There is no repository called "billing" here; this channel can use payments, infra`},
		{"unmapped channel", "C3", unmapped, "Sorry, I am not enabled here."},
		{"follow-up naming another repo", "C1", named, "This thread is about infra"},
		{"repo that never cloned", "C9", down, "cannot read the repository right now"},
	} {
		if got := w.replies(tc.channel, tc.root); !strings.Contains(got, tc.want) {
			t.Errorf("%s: thread says\n%s\nwant %q", tc.name, got, tc.want)
		}
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("model requests = %d, want 2 (only the two answered questions)", n)
	}

	rec := httptest.NewRecorder()
	w.svc.bot.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var h struct {
		Status string             `json:"status"`
		Repos  []repos.RepoHealth `json:"repos"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatalf("healthz: %v\n%s", err, rec.Body.String())
	}
	if len(h.Repos) != 3 || h.Repos[0].Commit != paySHA || h.Repos[1].Commit != infraSHA || h.Repos[2].Available || h.Repos[2].LastError == "" {
		t.Errorf("healthz repos = %+v", h.Repos)
	}
}

// Option-injection attempts through the model's tool calls are refused: a
// commit that reads as an option is an error result, shown as a failed
// context line, a path that looks like one is only a path, and git writes
// nothing and runs no pager.
func TestRepoToolsRefuseOptions(t *testing.T) {
	up, _ := newUpstream(t, map[string]string{"README.md": "# x\n"})
	out := filepath.Join(t.TempDir(), "x")
	pagerMark := filepath.Join(t.TempDir(), "pager-ran")
	model := newScriptModel(t, func(n int, req llmtest.Request) (llmtest.Reply, <-chan struct{}) {
		if n == 1 {
			return toolCalls(
				[2]string{"git_show", fmt.Sprintf(`{"commit":"--output=%s"}`, out)},
				[2]string{"git_show", fmt.Sprintf(`{"commit":"-c core.pager=touch %s"}`, pagerMark)},
				[2]string{"git_show", `{"commit":"--help"}`},
				[2]string{"git_blame", `{"path":"README.md","commit":"--help"}`},
				[2]string{"git_log", fmt.Sprintf(`{"path":"--output=%s"}`, out)},
			), nil
		}
		return answerMsg("Nothing to see."), nil
	})
	w := newRepoWorld(t, fmt.Sprintf("repos:\n  - name: r\n    url: %s\n    channels: [\"*\"]\n", up.URL), model)
	root := w.mention("C1", "show me", "")
	w.waitTurns(1)
	results := w.toolResults(2)
	if len(results) != 5 {
		t.Fatalf("tool results = %d, want 5: %q", len(results), results)
	}
	for i, r := range results[:4] {
		if !strings.Contains(r, `starts with "-" and would read as an option`) {
			t.Errorf("call %d: result %q does not refuse an option", i, r)
		}
	}
	// A path is never an option: git_log looks for a file of that name.
	if !strings.Contains(results[4], "no commits: path --output=") {
		t.Errorf("git_log with an option as its path: %q, want it read as a path", results[4])
	}
	var fallback strings.Builder // each message's text once, without its blocks
	for _, m := range w.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID) {
		fallback.WriteString(m.Text + "\n")
	}
	if n := strings.Count(fallback.String(), "✗"); n != 4 {
		t.Errorf("failed context lines = %d, want 4:\n%s", n, w.replies("C1", root))
	}
	for _, p := range []string{out, pagerMark} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists (err %v): git ran an option", p, err)
		}
	}
}

// bot ask goes through the same citation check as Slack: over a repo of
// BOT_CONFIG, a real citation becomes a permalink at the leased commit, a
// hallucinated one is flagged, and the footer names the repo and commit.
func TestAskChecksCitations(t *testing.T) {
	up, sha := newUpstream(t, map[string]string{"retry/backoff.go": "package retry\n\nfunc Backoff() {}\n"})
	fake := newModel(t, nil, `{"content":"See retry/backoff.go:3, not retry/jitter.go:1."}`)
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_STREAM": "false",
		"BOT_CONFIG": libConfig(t, up.URL), "BOT_DATA_DIR": t.TempDir()})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "in lib: how does backoff work?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	for _, want := range []string{
		"[retry/backoff.go:3](https://codeberg.org/acme/lib/src/commit/" + sha + "/retry/backoff.go#L3)",
		"retry/jitter.go:1 ⚠️ _(not in repo@" + sha[:7] + ")_",
		"lib@" + sha[:7] + " · 1 steps",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if q, _ := json.Marshal(fake.Request(t, 0).Map(t)["messages"]); !strings.Contains(string(q), "how does backoff work?") || strings.Contains(string(q), "in lib:") {
		t.Errorf("the question should reach the model without the repo choice: %s", q)
	}
}
