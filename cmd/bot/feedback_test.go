package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/session"
)

// hostileComment is what a person may type in the feedback modal: a
// terminal's escapes, a bidi override, a tag character, and a line made
// to look like another entry.
const hostileComment = "bad \x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07 \u202egnp.exe\u202c \U000E0041\n2026-01-01 00:00:00  👍 up  by U0"

// seedFeedback writes, through the real SQLite store in dataDir, a
// thread with two turns that asked the same question (the first rated
// 👎 two days ago, the second 👍 now) and a thread whose history was
// compacted past its rated turn.
func seedFeedback(t *testing.T, dataDir string) {
	t.Helper()
	now := time.Now()
	clock := now.Add(-48 * time.Hour)
	st, err := session.OpenSQLite(t.Context(), filepath.Join(dataDir, session.SQLiteFile), session.SQLiteOptions{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := t.Context()
	k := session.Key{Team: "T1", Channel: "C1", Thread: "1700000000.000100"}
	ask := func(id string, key session.Key, answer string) {
		t.Helper()
		q := "how does retry work?"
		must(t, st.StartTurn(ctx, session.Turn{ID: id, Key: key, User: "U1", Question: q, Started: clock}, "acme-widget", llm.Message{Role: llm.RoleUser, Content: q}))
		must(t, st.SetCommit(ctx, key, "e9c20a6f1e0eb34f63e9fbcf9ced9600d5b081e4"))
		must(t, st.AppendStep(ctx, id, []llm.Message{
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"client/retry.go","start_line":10,"end_line":40}`}}},
			{Role: llm.RoleTool, ToolCallID: "c1", Content: "…"},
		}, llm.Usage{}))
		must(t, st.AppendStep(ctx, id, []llm.Message{{Role: llm.RoleAssistant, Content: answer}}, llm.Usage{}))
		must(t, st.EndTurn(ctx, id, session.TurnDone, ""))
		clock = clock.Add(time.Second)
	}
	ask("t1", k, "It retries **three** times.\nSee client/retry.go:12.")
	ask("t2", k, "The second answer.")
	must(t, st.Rate(ctx, session.Feedback{TurnID: "t1", User: "U7", Rating: session.RatingDown, Reason: "wrong", Comment: hostileComment}))
	clock = now
	must(t, st.Rate(ctx, session.Feedback{TurnID: "t2", User: "U8", Rating: session.RatingUp}))
	k2 := session.Key{Team: "T1", Channel: "C2", Thread: "1700000000.000200"}
	ask("t3", k2, "Gone.")
	must(t, st.ReplaceHistory(ctx, k2, []llm.Message{{Role: llm.RoleUser, Content: "(summary of earlier turns)"}}))
	must(t, st.Rate(ctx, session.Feedback{TurnID: "t3", User: "U8", Rating: session.RatingUp}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFeedbackListsRatingsForReview(t *testing.T) {
	dataDir := t.TempDir()
	seedFeedback(t, dataDir)
	env := envMap(map[string]string{"REPO_PATH": testRepo(t), "BOT_DATA_DIR": dataDir})
	feedback := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(t.Context(), append([]string{"feedback"}, args...), env, strings.NewReader(""), &out, &errOut); err != nil {
			t.Fatalf("bot feedback %q: %v\nstderr: %s", args, err, errOut.String())
		}
		return out.String()
	}

	text := feedback()
	for _, want := range []string{
		"👎 down  by U7  (wrong)", "👍 up  by U8",
		"repo     acme-widget @ e9c20a6", "asked    how does retry work?",
		"answer   It retries **three** times. See client/retry.go:12.", // the first turn's, not the second's
		"tools    read_file client/retry.go",
		"history  the thread's history no longer holds this turn",
		`\x1b[2J`, `\u202e`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("bot feedback lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(text, "\x1b\u202e\U000E0041") {
		t.Errorf("bot feedback printed a character the terminal obeys:\n%q", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "2026-01-01") {
			t.Errorf("a comment printed a line of its own: %q", line)
		}
	}
	if got := feedback("--since", "1d"); strings.Contains(got, "U7") || !strings.Contains(got, "U8") {
		t.Errorf("bot feedback --since 1d shows the 👎 of two days ago, or not the 👍 of now:\n%s", got)
	}

	raw := feedback("--json")
	if strings.ContainsAny(raw, "\x1b\u202e\U000E0041") {
		t.Errorf("bot feedback --json printed a character the terminal obeys:\n%q", raw)
	}
	var got []review
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("bot feedback --json is not JSON: %v\n%s", err, raw)
	}
	if len(got) != 3 || got[2].Comment != hostileComment || got[2].Turn != "t1" || !strings.HasPrefix(got[2].ToolCalls[0], "read_file client/retry.go") {
		t.Errorf("bot feedback --json = %+v; want three ratings, the oldest t1's with its comment as typed", got)
	}
}

func TestFeedbackSinceIsChecked(t *testing.T) {
	for _, since := range []string{"0d", "-1d", "week", "999999d", "-5h"} {
		var out, errOut bytes.Buffer
		env := envMap(map[string]string{"REPO_PATH": testRepo(t), "BOT_DATA_DIR": t.TempDir()})
		err := run(t.Context(), []string{"feedback", "--since", since}, env, strings.NewReader(""), &out, &errOut)
		if _, ok := err.(usageError); !ok || !strings.Contains(err.Error(), "is not an age") {
			t.Errorf("--since %s: err = %v, want a usage error", since, err)
		}
	}
}
