package slackbot

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/render"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
	"github.com/askrepo/askrepo/internal/turn"
)

// restartWorld is what outlives one bot process: the Slack workspace and
// the store. A test leaves a turn in it (cutTurn, or a bot it stops) and
// starts the next bot on it with newHarness.
func restartWorld(t *testing.T) (*slacktest.Server, *session.Memory) {
	t.Helper()
	srv := slacktest.New()
	t.Cleanup(srv.Close)
	return srv, session.NewMemory()
}

// cutTurn leaves in store what a crash after step 1 leaves: a running turn
// whose history has the question, the model's calls and their results. The
// question is in the fake Slack as a top-level message the bot ignores, so
// the thread exists. It returns the thread's key.
func cutTurn(t *testing.T, srv *slacktest.Server, store session.Store, question string, state session.TurnState, answered bool) session.Key {
	t.Helper()
	ts := srv.Reply("C1", "U1", question, "")
	key := session.Key{Team: slacktest.DefaultTeamID, Channel: "C1", Thread: ts}
	ctx := t.Context()
	tr := session.Turn{ID: "cut1", Key: key, User: "U1", Question: question, MsgTS: ts}
	if err := store.StartTurn(ctx, tr, testRepoName, llm.Message{Role: llm.RoleUser, Content: question}); err != nil {
		t.Fatal(err)
	}
	step := []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1_0", Name: "read_file", Arguments: `{"path":"README.md"}`}}},
		{Role: llm.RoleTool, ToolCallID: "call_1_0", Content: "1\t# widget"},
	}
	if err := store.AppendStep(ctx, "cut1", step, llm.Usage{PromptTokens: 1000, CompletionTokens: 30}); err != nil {
		t.Fatal(err)
	}
	if answered {
		if err := store.AppendStep(ctx, "cut1", []llm.Message{{Role: llm.RoleAssistant, Content: "**Answer** to: " + question}}, llm.Usage{}); err != nil {
			t.Fatal(err)
		}
	}
	if state != session.TurnRunning {
		if err := store.SetTurnState(ctx, "cut1", state); err != nil {
			t.Fatal(err)
		}
	}
	return key
}

func TestRecoveryModes(t *testing.T) {
	tests := []struct {
		name     string
		mode     string
		state    session.TurnState
		note     string
		requests int  // model requests the recovery makes
		fromStep bool // the first request holds step 1's results
	}{
		{"resume a crashed turn", RecoverResume, session.TurnRunning, noteResuming, 1, true},
		{"resume an interrupted turn", RecoverResume, session.TurnInterrupted, noteResuming, 1, true},
		{"rerun from the question", RecoverRerun, session.TurnRunning, noteRerunning, 2, false},
		{"report only", RecoverReport, session.TurnInterrupted, noteAskAgain, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, store := restartWorld(t)
			key := cutTurn(t, srv, store, "what is widget?", tt.state, false)

			h := newHarness(t, harnessOpts{slack: srv, store: store, cfg: func(c *Config) { c.Recovery = tt.mode }})
			lines := h.waitTurns(1)
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			msgs := h.slack.Snapshot().BotMessages("C1", key.Thread, slacktest.DefaultBotID)
			texts := allTexts(msgs)
			if len(texts) == 0 || texts[0] != tt.note {
				t.Fatalf("thread = %q, want it to start with %q", texts, tt.note)
			}
			if n := strings.Count(strings.Join(texts, "\n"), tt.note); n != 1 {
				t.Errorf("the note is in the thread %d times, want once", n)
			}
			wantAnswers := 1
			if tt.mode == RecoverReport {
				wantAnswers = 0
			}
			if got := answers(msgs); len(got) != wantAnswers {
				t.Errorf("answers = %q, want %d", allTexts(got), wantAnswers)
			}
			reqs := h.ai.Requests()
			if len(reqs) != tt.requests {
				t.Fatalf("model requests = %d, want %d", len(reqs), tt.requests)
			}
			if tt.requests > 0 {
				first := reqs[0]
				results := 0
				for _, m := range first.Chat.Messages {
					if m.Role == "tool" {
						results++
					}
				}
				if want := map[bool]int{true: 1, false: 0}[tt.fromStep]; results != want {
					t.Errorf("first request after the restart holds %d tool results, want %d", results, want)
				}
				if q := question(first); q != "what is widget?" {
					t.Errorf("first request's question = %q", q)
				}
			}
			// The store agrees: nothing left unfinished, and the history
			// has each step once.
			unf, err := store.Unfinished(t.Context())
			if err != nil || len(unf) != 0 {
				t.Errorf("unfinished after recovery = %+v, %v; want none", unf, err)
			}
			old, _ := store.Turn(t.Context(), "cut1")
			wantOld := map[string]session.TurnState{RecoverResume: session.TurnContinued, RecoverRerun: session.TurnContinued, RecoverReport: session.TurnFailed}[tt.mode]
			if old.State != wantOld {
				t.Errorf("cut turn's state = %s, want %s", old.State, wantOld)
			}
			sess, _, _ := store.Session(t.Context(), key)
			if tt.mode != RecoverReport {
				checkHistory(t, sess.History)
				if last := sess.History[len(sess.History)-1]; last.Role != llm.RoleAssistant || !strings.Contains(last.Content, "Answer") {
					t.Errorf("history ends with %+v, want the answer", last)
				}
				if lines[0]["outcome"] != outcomeAnswered {
					t.Errorf("turn outcome = %v", lines[0]["outcome"])
				}
			}
		})
	}
}

// checkHistory fails on a tool call without exactly one result or a
// duplicated call id: what a doubled or lost step leaves behind.
func checkHistory(t *testing.T, h []llm.Message) {
	t.Helper()
	calls, results := map[string]int{}, map[string]int{}
	for _, m := range h {
		for _, c := range m.ToolCalls {
			calls[c.ID]++
		}
		if m.Role == llm.RoleTool {
			results[m.ToolCallID]++
		}
	}
	for id, n := range calls {
		if n != 1 || results[id] != 1 {
			t.Errorf("call %s appears %d times with %d results; want once each", id, n, results[id])
		}
	}
}

// A crash after the answer was stored, before the turn ended: if the answer
// is in the thread it is not posted again, else it is posted without asking
// the model again and without the "interrupted" note.
func TestRecoveryOfAnAnsweredTurn(t *testing.T) {
	for _, posted := range []bool{true, false} {
		t.Run(map[bool]string{true: "answer already posted", false: "answer not posted yet"}[posted], func(t *testing.T) {
			srv, store := restartWorld(t)
			key := cutTurn(t, srv, store, "what is widget?", session.TurnRunning, true)
			if posted {
				api := srv.Client()
				for _, m := range render.AnswerMessages("**Answer** to: what is widget?", render.Footer{Steps: 2, Repo: testRepoName}) {
					opts := []slack.MsgOption{slack.MsgOptionTS(key.Thread), slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(m.Blocks...)}
					if _, _, err := api.PostMessageContext(t.Context(), "C1", opts...); err != nil {
						t.Fatal(err)
					}
				}
			}
			h := newHarness(t, harnessOpts{slack: srv, store: store})
			lines := h.waitTurns(1)
			if err := h.stop(); err != nil {
				t.Fatal(err)
			}
			want := map[bool]string{true: outcomeAlreadyPosted, false: outcomeAnswered}[posted]
			if lines[0]["outcome"] != want {
				t.Errorf("outcome = %v, want %s", lines[0]["outcome"], want)
			}
			msgs := srv.Snapshot().BotMessages("C1", key.Thread, slacktest.DefaultBotID)
			if got := answers(msgs); len(got) != 1 {
				t.Errorf("answers in the thread = %q, want exactly one", allTexts(got))
			}
			if slices.Contains(allTexts(msgs), noteResuming) {
				t.Errorf("thread = %q; an answer that exists needs no interruption note", allTexts(msgs))
			}
			if n := len(h.ai.Requests()); n != 0 {
				t.Errorf("model requests = %d, want 0", n)
			}
			if tr, _ := store.Unfinished(t.Context()); len(tr) != 0 {
				t.Errorf("unfinished = %+v", tr)
			}
		})
	}
}

// Two bots starting on the same store at once (a double start) find the
// same cut-off turn; it is answered once.
func TestRecoveryDoubleStart(t *testing.T) {
	srv, store := restartWorld(t)
	hold := newGate()
	ai := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		rep.Wait = hold.c() // both bots are up before either gets an answer
		return rep
	})
	key := cutTurn(t, srv, store, "what is widget?", session.TurnRunning, false)
	h1 := newHarness(t, harnessOpts{slack: srv, store: store, ai: ai})
	h2 := newHarness(t, harnessOpts{slack: srv, store: store, ai: ai})
	hold.open()
	// Whichever way the race goes (the second start loses the claim, or
	// takes over the first's running turn and fences it off), the turn
	// ends answered once.
	ctx := h1.ctx()
	for {
		unf, err := store.Unfinished(ctx)
		msgs := srv.Snapshot().BotMessages("C1", key.Thread, slacktest.DefaultBotID)
		if err == nil && len(unf) == 0 && len(answers(msgs)) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the cut turn was not finished:\n%s\n%s", h1.logs.String(), h2.logs.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
	h1.stop()
	h2.stop()
	outcomes := append(h1.logLines("turn"), h2.logLines("turn")...)
	answered := 0
	for _, l := range outcomes {
		if l["outcome"] == outcomeAnswered {
			answered++
		}
	}
	if answered != 1 {
		t.Errorf("turns answered = %d, want 1: %v", answered, outcomes)
	}
	msgs := srv.Snapshot().BotMessages("C1", key.Thread, slacktest.DefaultBotID)
	if got := answers(msgs); len(got) != 1 {
		t.Errorf("answers = %q, want exactly one", allTexts(got))
	}
	if n := strings.Count(strings.Join(allTexts(msgs), "\n"), noteResuming); n < 1 {
		t.Errorf("interruption note posted %d times, want it", n)
	}
}

// SIGTERM in the middle of a turn: after the grace period the turn is
// marked interrupted with its first step stored, and the next start resumes
// it from there, once, while a new question in the same thread waits behind
// it.
func TestShutdownThenResume(t *testing.T) {
	srv, store := restartWorld(t)
	hold := newGate()
	t.Cleanup(hold.open)
	first := llmtest.New(t, heldAnswer(hold)) // hold never opens: the drain cuts the turn
	h1 := newHarness(t, harnessOpts{slack: srv, store: store, ai: first, cfg: func(c *Config) { c.DrainTimeout = 20 * time.Millisecond }})
	root := h1.mention("C1", "what is widget?", "")
	waitQuestionAnswering(t, h1, "what is widget?")
	if err := h1.stop(); err != nil {
		t.Fatal(err)
	}
	unf, _ := store.Unfinished(t.Context())
	if len(unf) != 1 || unf[0].State != session.TurnInterrupted || unf[0].Steps != 1 {
		t.Fatalf("after shutdown: unfinished = %+v, want one interrupted turn with 1 step", unf)
	}

	h2 := newHarness(t, harnessOpts{slack: srv, store: store})
	// A follow-up arriving right after the start waits for the resumed turn.
	h2.slack.Reply("C1", "U1", "and then?", root)
	h2.waitTurns(2)
	if err := h2.stop(); err != nil {
		t.Fatal(err)
	}
	reqs := h2.ai.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests after restart = %d, want 3 (the resumed answer, then the follow-up's two)", len(reqs))
	}
	if question(reqs[0]) != "what is widget?" || reqs[0].Last().Role != "tool" {
		t.Errorf("first request after restart = %q ending with %s; want the cut turn, resumed after its tool results", question(reqs[0]), reqs[0].Last().Role)
	}
	if question(reqs[1]) != "and then?" {
		t.Errorf("second request = %q, want the follow-up", question(reqs[1]))
	}
	texts := allTexts(srv.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID))
	joined := strings.Join(texts, "\n")
	for note, want := range map[string]int{noteWillResume: 1, noteResuming: 1, "**Answer** to: what is widget?": 1, "**Answer** to: and then?": 1} {
		if n := strings.Count(joined, note); n != want {
			t.Errorf("%q appears %d times in the thread, want %d:\n%s", note, n, want, joined)
		}
	}
	sess, _, _ := store.Session(t.Context(), session.Key{Team: "T1", Channel: "C1", Thread: root})
	checkHistory(t, sess.History)
}

// A long thread crosses the context budget: it is compacted once, between
// turns, keeping every question and answer verbatim; every other request
// starts with the previous request's messages byte for byte, and the tools
// are byte-identical in all of them.
func TestCompactionKeepsPrefixStable(t *testing.T) {
	big := strings.Repeat("widget configuration line with some words in it\n", 160) // ~8 KB
	script := func(r llmtest.Request) llmtest.Reply {
		size := 0
		for _, m := range r.Chat.Messages {
			size += len(m.Content) + 14
		}
		prompt := size * 2 / 7 // a tokenizer close to the estimate's 3.5 bytes
		if r.Last().Role == "tool" {
			return llmtest.Reply{Content: "**Answer** to: " + question(r), Usage: &llmtest.Usage{Prompt: prompt, Output: 20}}
		}
		return llmtest.Reply{Calls: []llmtest.Call{{Name: "read_file", Args: `{"path":"big.txt"}`}}, Usage: &llmtest.Usage{Prompt: prompt, Output: 20}}
	}
	h := newHarness(t, harnessOpts{script: script, files: map[string]string{"big.txt": big}, runner: func(c *turn.Config) { c.Budget = 6000 }})
	questions := []string{"first question?", "second question?", "third question?", "fourth question?"}
	root := h.mention("C1", questions[0], "")
	h.waitTurns(1)
	for i, q := range questions[1:] {
		h.slack.Reply("C1", "U1", q, root)
		h.waitTurns(i + 2)
	}
	if n := len(h.logLines("compacted a thread's history")); n != 1 {
		t.Fatalf("compactions = %d, want 1", n)
	}

	type body struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	var bodies []body
	for _, r := range h.ai.Requests() {
		var b body
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	reqs := h.ai.Requests()
	breaks := 0
	for i := 1; i < len(bodies); i++ {
		if string(bodies[i].Tools) != string(bodies[0].Tools) {
			t.Errorf("request %d: tools differ from request 1", i+1)
		}
		prev, cur := bodies[i-1].Messages, bodies[i].Messages
		stable := len(cur) > len(prev)
		for j := 0; stable && j < len(prev); j++ {
			stable = string(prev[j]) == string(cur[j])
		}
		if stable {
			continue
		}
		breaks++
		// The one break is the first request of the turn that compacted.
		q := question(reqs[i])
		if reqs[i].Last().Role != "user" {
			t.Errorf("request %d (%q) does not extend request %d, and it is not a turn's first", i+1, q, i)
		}
		// Questions and answers before it are all there, verbatim.
		var sent []string
		for _, m := range reqs[i].Chat.Messages {
			sent = append(sent, m.Role+": "+m.Content)
		}
		all := strings.Join(sent, "\n")
		for _, earlier := range questions[:slices.Index(questions, q)] {
			for _, want := range []string{earlier, "assistant: **Answer** to: " + earlier} {
				if !strings.Contains(all, want) {
					t.Errorf("compacted request lacks %q:\n%.2000s", want, all)
				}
			}
		}
		if !strings.Contains(all, "[elided: read_file big.txt returned 160 lines") {
			t.Errorf("compacted request has no elided result:\n%.2000s", all)
		}
	}
	if breaks != 1 {
		t.Errorf("prefix broke %d times, want once (at the compaction)", breaks)
	}
	sess, _, _ := h.store.Session(t.Context(), session.Key{Team: "T1", Channel: "C1", Thread: root})
	if agent.QuestionIndex(sess.History) < 0 || strings.Count(fmtHistory(sess.History), "user: ") != 4 {
		t.Errorf("stored history lost questions:\n%s", fmtHistory(sess.History))
	}
}

func fmtHistory(h []llm.Message) string {
	var b strings.Builder
	for _, m := range h {
		b.WriteString(string(m.Role) + ": " + firstLineOf(m.Content) + "\n")
	}
	return b.String()
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// An MCP ask cut off by a restart is not a Slack thread: recovery leaves it
// alone, and answers the Slack thread cut off beside it.
func TestRecoveryLeavesMCPConversations(t *testing.T) {
	srv, store := restartWorld(t)
	cutTurn(t, srv, store, "what is widget?", session.TurnRunning, false)
	mcpKey := session.Key{Team: session.MCPTeam, Channel: "ci", Thread: "0123456789abcdef0123456789abcdef"}
	if err := store.StartTurn(t.Context(), session.Turn{ID: "mcp1", Key: mcpKey, Question: "q"}, testRepoName,
		llm.Message{Role: llm.RoleUser, Content: "q"}); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{slack: srv, store: store})
	h.waitTurns(1)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"msg":"recovering turns a restart cut off","component":"slackbot","count":1,`) {
		t.Errorf("recovery did not take the Slack turn alone:\n%s", logs)
	}
	unfinished, err := store.Unfinished(t.Context())
	if err != nil || len(unfinished) != 1 || unfinished[0].ID != "mcp1" {
		t.Errorf("unfinished = %+v, %v; want the MCP turn, untouched", unfinished, err)
	}
}
