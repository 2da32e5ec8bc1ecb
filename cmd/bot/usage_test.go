package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/usage"
)

// seedUsage writes turns into the SQLite store of dataDir: two answered
// by U1 and U2 about repo pay, one failed, and one older than 30 days.
func seedUsage(t *testing.T, dataDir string) {
	t.Helper()
	now := time.Now()
	at := now
	st, err := session.OpenSQLite(t.Context(), filepath.Join(dataDir, session.SQLiteFile), session.SQLiteOptions{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	turns := []struct {
		id, ch, user, repo, model string
		age                       time.Duration
		u                         llm.Usage
		state                     session.TurnState
	}{
		{"t1", "C1", "U1", "pay", "gpt-x", 2 * time.Hour, llm.Usage{PromptTokens: 2_000_000, CachedPromptTokens: 1_000_000, CompletionTokens: 100_000}, session.TurnDone},
		{"t2", "C2", "U2", "pay", "gpt-x", time.Hour, llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 0}, session.TurnDone},
		{"t3", "C2", "U2", "docs", "other", 3 * time.Hour, llm.Usage{PromptTokens: 10, CompletionTokens: 5}, session.TurnFailed},
		{"old", "C1", "U1", "pay", "gpt-x", 40 * 24 * time.Hour, llm.Usage{PromptTokens: 9_000_000}, session.TurnDone},
	}
	for _, tr := range turns {
		at = now.Add(-tr.age)
		key := session.Key{Team: "T1", Channel: tr.ch, Thread: tr.id}
		if err := st.StartTurn(t.Context(), session.Turn{ID: tr.id, Key: key, User: tr.user, Model: tr.model}, tr.repo, llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
			t.Fatal(err)
		}
		if err := st.AppendStep(t.Context(), tr.id, []llm.Message{{Role: llm.RoleAssistant, Content: "a"}}, tr.u); err != nil {
			t.Fatal(err)
		}
		if err := st.EndTurn(t.Context(), tr.id, tr.state, ""); err != nil {
			t.Fatal(err)
		}
	}
}

func usageEnv(t *testing.T, dataDir string) func(string) (string, bool) {
	t.Helper()
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	doc := "budgets:\n  prices:\n    gpt-x: {input: 2, cached: 0.5, output: 8}\n"
	if err := os.WriteFile(cfgFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return envMap(map[string]string{"BOT_DATA_DIR": dataDir, "BOT_CONFIG": cfgFile, "OPENAI_MODEL": "gpt-x"})
}

func TestUsageReportJSON(t *testing.T) {
	dataDir := t.TempDir()
	seedUsage(t, dataDir)
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"usage", "--by", "repo", "--json"}, usageEnv(t, dataDir), strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("bot usage: %v\n%s", err, errOut.String())
	}
	var rep usage.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("output is not a report: %v\n%s", err, out.String())
	}
	if d := time.Since(rep.Since) - 30*24*time.Hour; d < 0 || d > time.Minute {
		t.Errorf("since %v; want 30 days ago", rep.Since)
	}
	want := []usage.Line{
		{Group: "docs", Turns: 1, UncachedTokens: 10, CompletionTokens: 5, Unpriced: []string{"other"}},
		// 2M uncached ·2 + 1M cached ·0.5 + 0.1M out ·8, per million.
		{Group: "pay", Answers: 2, Turns: 2, UncachedTokens: 2_000_000, CachedTokens: 1_000_000, CompletionTokens: 100_000, EstimatedCost: 4 + 0.5 + 0.8},
	}
	if d := cmp.Diff(want, rep.Lines); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
	if rep.Total.Answers != 2 || rep.Total.Turns != 3 || rep.Total.EstimatedCost != 5.3 {
		t.Errorf("total %+v; want 2 answers of 3 turns, cost 5.30", rep.Total)
	}
}

func TestUsageReportTable(t *testing.T) {
	dataDir := t.TempDir()
	seedUsage(t, dataDir)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"usage", "--by", "user"}, []string{"by user", "USER", "U1", "U2", "TOTAL", "5.30", "No price in BOT_CONFIG's budgets.prices for other"}},
		{[]string{"usage", "--by", "channel", "--since", "90m"}, []string{"by channel", "C2", "2.00"}},
		{[]string{"usage", "--by", "model"}, []string{"by model", "MODEL", "gpt-x", "other", "5.30"}},
		{[]string{"usage", "--since", "60d"}, []string{"all turns", "TOTAL", "23.30"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(t.Context(), tc.args, usageEnv(t, dataDir), strings.NewReader(""), &out, &errOut); err != nil {
				t.Fatalf("bot usage: %v\n%s", err, errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			if strings.Contains(tc.args[len(tc.args)-1], "90m") && strings.Contains(out.String(), "C1") {
				t.Errorf("--since 90m shows C1, whose turn started 2h ago:\n%s", out.String())
			}
		})
	}
}

func TestUsageRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"usage", "--by", "thread"},
		{"usage", "--since", "-3d"},
		{"usage", "--since", "soon"},
	} {
		var out, errOut bytes.Buffer
		err := run(t.Context(), args, usageEnv(t, t.TempDir()), strings.NewReader(""), &out, &errOut)
		if _, ok := err.(usageError); !ok {
			t.Errorf("%q: err = %v; want a usage error", args, err)
		}
	}
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"usage"}, usageEnv(t, t.TempDir()), strings.NewReader(""), &out, &errOut); err != nil || !strings.Contains(out.String(), "No usage: no store at") {
		t.Errorf("usage without a store: %v, %q; want it said, nothing created", err, out.String())
	}
}

// In the terminal the budgets count the conversation's own turns (bot
// chat keeps them in memory): once the first answer used up the
// repository's budget, the next question gets the sentence and the model
// hears nothing of it.
func TestChatBudgetRefusesBeforeTheModel(t *testing.T) {
	fake := newModel(t, nil, `{"content":"one"}`, `{"content":"two"}`)
	cfgFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	doc := "budgets:\n  limits:\n    - {per: repo, period: day, tokens: 100}\n"
	if err := os.WriteFile(cfgFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_STREAM": "false",
		"REPO_PATH": testRepo(t), "REPO_NAME": "widget", "BOT_CONFIG": cfgFile})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"chat"}, env, strings.NewReader("first?\nsecond?\n"), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	if n := fake.Count(); n != 1 {
		t.Errorf("the model got %d requests; want 1, none for the question over budget", n)
	}
	want := "Questions about widget have used today's budget of 100 tokens for each repository, so I am not asking the model; it resets at 00:00 UTC on"
	if !strings.Contains(out.String(), want) || strings.Contains(errOut.String(), "error") {
		t.Errorf("output lacks %q:\nstdout: %s\nstderr: %s", want, out.String(), errOut.String())
	}
}

// The terminal's footer, its line per answer, says how many model
// requests were sent again after a transient failure.
func TestAskFooterCountsRetries(t *testing.T) {
	var first sync.Once
	fake := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		failed := false
		first.Do(func() { failed = true })
		if failed {
			return llmtest.Reply{Status: 503}
		}
		return llmtest.Reply{Content: "fine"}
	}, llmtest.WithKey("sk-test"))
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake.URL, "OPENAI_STREAM": "false", "REPO_PATH": testRepo(t)})
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"ask", "flaky?"}, env, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "· 1 retried") {
		t.Errorf("footer does not count the retry:\n%s", out.String())
	}
}
