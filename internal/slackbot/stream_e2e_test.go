package slackbot

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/render"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
	"github.com/askrepo/askrepo/internal/tracing"
	"github.com/askrepo/askrepo/internal/tracing/tracingtest"
)

// streamed is harness options for the streamed UI over a model that
// streams, with script answering.
func streamed(script llmtest.Script, cfg func(*Config)) harnessOpts {
	return harnessOpts{script: script, stream: true, cfg: func(c *Config) {
		c.UI = UIStream
		if cfg != nil {
			cfg(c)
		}
	}}
}

// streams are the bot's streamed messages in the thread root, in order.
func streams(st *slacktest.State, root string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range st.BotMessages("C1", root, slacktest.DefaultBotID) {
		if m.Via == "chat.startStream" {
			out = append(out, m)
		}
	}
	return out
}

// streamedText is what the thread's streamed messages show, joined.
func streamedText(ms []slacktest.Message) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, m.MarkdownText)
	}
	return strings.Join(parts, "")
}

func TestStreamedAnswerWithTaskCards(t *testing.T) {
	h := newHarness(t, streamed(readThenAnswer, nil))
	root := h.mention("C1", "what is this", "")
	lines := h.waitTurns(1)
	if lines[0]["outcome"] != outcomeAnswered {
		t.Fatalf("outcome %v", lines[0]["outcome"])
	}
	h.waitReaction("C1", root, reactDone)
	st := h.slack.Snapshot()
	if bot := st.BotMessages("C1", root, slacktest.DefaultBotID); len(bot) != 1 {
		t.Fatalf("thread has %d bot messages, want the one streamed: %q", len(bot), allTexts(bot))
	}
	m := streams(st, root)[0]
	if m.Streaming || m.Recipient != "U1" || m.TaskDisplayMode != TasksTimeline {
		t.Errorf("streamed message: streaming %v, recipient %q, mode %q", m.Streaming, m.Recipient, m.TaskDisplayMode)
	}
	tasks := m.Tasks()
	if len(tasks) != 2 {
		t.Fatalf("task cards %+v, want one for each of the two parallel calls", tasks)
	}
	for i, want := range []string{"read_file README.md", "list_files ."} {
		tk := tasks[i]
		if tk.ID != fmt.Sprintf("call_1_%d", i) || tk.Title != want || tk.Status != "complete" ||
			!slices.Equal(tk.Statuses, []string{"in_progress", "complete"}) || tk.Details == "" {
			t.Errorf("card %d = %+v, want %q in_progress then complete with a summary", i, tk, want)
		}
	}
	if m.MarkdownText != "**Answer** to: what is this" {
		t.Errorf("streamed text %q", m.MarkdownText)
	}
	if got := m.BlockTypes(); !slices.Equal(got, []string{"context", "context_actions"}) {
		t.Errorf("blocks under the answer %v, want the footer and the feedback buttons", got)
	}
	if !strings.Contains(m.AllText(), "2 steps") {
		t.Errorf("footer missing: %q", m.AllText())
	}
	var statuses []string
	for _, s := range st.Sessions {
		statuses = append(statuses, s.Status)
	}
	if !slices.Equal(statuses, []string{"processing", "active"}) {
		t.Errorf("agent session statuses %v, want processing while the turn ran, then active", statuses)
	}
	if n := len(st.CallsTo("chat.postMessage")); n != 0 {
		t.Errorf("%d chat.postMessage calls; the streamed message is the whole turn", n)
	}
	// The message is recorded with the turn, for a restart to close it.
	tr, err := h.store.Turn(h.ctx(), lines[0]["turn"].(string))
	if err != nil || !slices.Equal(tr.Parts, []string{streamPartPrefix + m.TS}) {
		t.Errorf("turn parts %q (%v), want the streamed message", tr.Parts, err)
	}
}

func TestStreamedRefusedCallCard(t *testing.T) {
	script := func(r llmtest.Request) llmtest.Reply {
		if r.Last().Role == "tool" {
			return llmtest.Reply{Content: "It is outside."}
		}
		return llmtest.Reply{Calls: []llmtest.Call{{Name: "read_file", Args: `{"path":"../../etc/passwd"}`}}}
	}
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "read the password file", "")
	h.waitTurns(1)
	tasks := streams(h.slack.Snapshot(), root)[0].Tasks()
	if len(tasks) != 1 || tasks[0].Status != "error" || tasks[0].Details == "" {
		t.Fatalf("cards %+v, want one in error with why", tasks)
	}
}

// TestStreamedTextMatchesPostedAnswer streams an answer with a valid and a
// made-up citation, a link off the repository and a mention token, and
// compares it with what the message UI posts for the same answer: the
// streamed text must be the posted text exactly, flags and all.
func TestStreamedTextMatchesPostedAnswer(t *testing.T) {
	answer := "See `README.md:1` for the title.\n\n" +
		"The limit is in `pay/limit.go:10-20`, <!channel>.\n\n" +
		"- one\n- two\n\n" +
		"More at [docs](https://evil.example/x).\n"
	script := answering(answer)
	hm := newHarness(t, harnessOpts{script: script, stream: true})
	rm := hm.mention("C1", "q", "")
	hm.waitTurns(1)
	posted := answers(hm.slack.Snapshot().BotMessages("C1", rm, slacktest.DefaultBotID))
	if len(posted) != 1 {
		t.Fatalf("message UI posted %d answers", len(posted))
	}
	want, _ := posted[0].Blocks[0]["text"].(string)

	hs := newHarness(t, streamed(script, nil))
	rs := hs.mention("C1", "q", "")
	hs.waitTurns(1)
	got := streamedText(streams(hs.slack.Snapshot(), rs))
	if got != want {
		t.Fatalf("streamed text\n%q\nwant the posted answer\n%q", got, want)
	}
	if !strings.Contains(got, "pay/limit.go:10-20") || strings.Contains(got, "<!channel>") {
		t.Errorf("citation or mention not rendered as posted: %q", got)
	}
}

func TestStreamedLongAnswerTwoMessages(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "Paragraph %d: %s\n\n", i, strings.Repeat("word ", 100))
	}
	answer := strings.TrimSpace(b.String())
	script := answering(answer)
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "long", "")
	lines := h.waitTurns(1)
	ms := streams(h.slack.Snapshot(), root)
	if len(ms) != 2 {
		t.Fatalf("%d streamed messages, want 2", len(ms))
	}
	// The full message is recorded as completed, with its text, so that a
	// restart does not show that text again.
	tr, err := h.store.Turn(h.ctx(), lines[0]["turn"].(string))
	want := []string{streamPartPrefix + ms[0].TS, doneRecord(ms[0].TS, ms[0].MarkdownText), streamPartPrefix + ms[1].TS}
	if err != nil || !slices.Equal(tr.Parts, want) {
		t.Errorf("turn parts %q (%v), want %q", tr.Parts, err, want)
	}
	for i, m := range ms {
		if n := render.StreamLen(m.MarkdownText); n > render.MaxStreamChars || m.Streaming {
			t.Errorf("message %d: %d characters, streaming %v", i, n, m.Streaming)
		}
	}
	if got := streamedText(ms); got != answer {
		t.Errorf("the two messages hold %d characters, want the answer's %d, none lost or doubled", len(got), len(answer))
	}
	if len(ms[0].Blocks) != 0 || !slices.Equal(ms[1].BlockTypes(), []string{"context", "context_actions"}) {
		t.Errorf("footer under %v / %v, want under the last message only", ms[0].BlockTypes(), ms[1].BlockTypes())
	}
}

func TestStreamClosedBySlackMidAnswer(t *testing.T) {
	hold := newGate()
	t.Cleanup(hold.open)
	script := func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if r.Last().Role == "tool" {
			rep = llmtest.Reply{Content: "First paragraph.\n\n", Wait: hold.c(), WaitAfterText: true, After: "Second paragraph."}
		}
		return rep
	}
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "q", "")
	st, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		ms := streams(st, root)
		return len(ms) == 1 && ms[0].MarkdownText == "First paragraph."
	})
	if err != nil {
		t.Fatal(err)
	}
	h.slack.CloseStream("C1", streams(st, root)[0].TS)
	hold.open()
	h.waitTurns(1)
	ms := streams(h.slack.Snapshot(), root)
	if len(ms) != 2 {
		t.Fatalf("%d streamed messages, want the closed one and its continuation", len(ms))
	}
	if ms[0].MarkdownText != "First paragraph." || ms[1].MarkdownText != "\n\nSecond paragraph." {
		t.Errorf("messages %q, %q: text lost or shown twice", ms[0].MarkdownText, ms[1].MarkdownText)
	}
	if !slices.Equal(ms[1].BlockTypes(), []string{"context", "context_actions"}) {
		t.Errorf("continuation ends with %v", ms[1].BlockTypes())
	}
}

func TestStreamFallbackToMessages(t *testing.T) {
	tests := []struct {
		ui     string
		starts int // chat.startStream calls for two questions
		logs   int
	}{
		// auto falls back for the workspace, and says so once.
		{UIAuto, 1, 1},
		// stream tries every turn; each still answers.
		{UIStream, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.ui, func(t *testing.T) {
			h := newHarness(t, harnessOpts{stream: true, cfg: func(c *Config) { c.UI = tt.ui }})
			h.slack.FailAlways("chat.startStream", slacktest.SlackError("feature_not_enabled"))
			for i, q := range []string{"first", "second"} {
				root := h.mention("C1", q, "")
				h.waitTurns(i + 1)
				msgs := h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)
				if a := answers(msgs); len(a) != 1 || !strings.Contains(a[0].AllText(), "Answer") {
					t.Fatalf("question %q: answers %q, want one, as a message", q, allTexts(msgs))
				}
			}
			st := h.slack.Snapshot()
			if n := len(st.CallsTo("chat.startStream")); n != tt.starts {
				t.Errorf("%d chat.startStream calls, want %d", n, tt.starts)
			}
			if n := len(h.logLines("Slack refused a streamed answer; answering as messages in this workspace for a while")); n != tt.logs {
				t.Errorf("fallback logged %d times, want %d", n, tt.logs)
			}
			want := fmt.Sprintf(`askrepo_stream_fallbacks_total{reason="feature_not_enabled"} %d`, tt.starts)
			if !strings.Contains(h.metrics(), want) {
				t.Errorf("fallbacks not counted, want %s:\n%s", want, grepLines(h.metrics(), "stream_fallbacks"))
			}
		})
	}
}

// A turn a restart cut after its answer was stored, streamed before the
// cut, and recovered by a process in the message UI: the streamed message
// is closed and the answer posted, not taken for a part already posted.
func TestStreamedTurnRecoveredAsMessages(t *testing.T) {
	srv, store := restartWorld(t)
	key := cutTurn(t, srv, store, "what is this", session.TurnRunning, true)
	old := deadStream(t, srv, key)
	if err := store.AddPart(t.Context(), "cut1", 0, streamPartPrefix+old); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{slack: srv, store: store})
	h.waitTurns(1)
	st := h.slack.Snapshot()
	if m, _ := st.Message("C1", old); m.Streaming {
		t.Error("the half-streamed message is left spinning")
	}
	if a := answers(st.BotMessages("C1", key.Thread, slacktest.DefaultBotID)); len(a) != 1 || !strings.Contains(a[0].AllText(), "**Answer** to: what is this") {
		t.Fatalf("answers %q, want the stored answer posted", allTexts(a))
	}
}

// waitCards waits until the thread's stream shows n completed cards.
func waitCards(t *testing.T, h *harness, root string, n int) slacktest.Message {
	t.Helper()
	st, err := h.slack.WaitFor(h.ctx(), func(st *slacktest.State) bool {
		ms := streams(st, root)
		if len(ms) != 1 {
			return false
		}
		done := 0
		for _, tk := range ms[0].Tasks() {
			if tk.Status == "complete" {
				done++
			}
		}
		return done == n
	})
	if err != nil {
		t.Fatal(err)
	}
	return streams(st, root)[0]
}

func TestStreamStoppedBySession(t *testing.T) {
	hold := newGate()
	t.Cleanup(hold.open)
	h := newHarness(t, streamed(heldAnswer(hold), nil))
	root := h.mention("C1", "a long question", "")
	m := waitCards(t, h, root, 2)
	h.slack.AgentSessionStopped("C1", root, "U7", m.TS)
	if lines := h.waitTurns(1); lines[0]["outcome"] != outcomeStopped {
		t.Fatalf("outcome %v, want stopped", lines[0]["outcome"])
	}
	msgs := h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID)
	if len(msgs) != 2 || msgs[1].Text != "<@U7> stopped this answer." {
		t.Fatalf("thread %q, want the stream and who stopped it", allTexts(msgs))
	}
}

func TestStreamStopButtonWithoutSessions(t *testing.T) {
	hold := newGate()
	t.Cleanup(hold.open)
	h := newHarness(t, streamed(heldAnswer(hold), nil))
	h.slack.FailAlways("agents.sessions.setStatus", slacktest.SlackError("missing_scope"))
	root := h.mention("C1", "a long question", "")
	waitCards(t, h, root, 2)
	var stop slacktest.Message
	for _, m := range h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID) {
		if stopValue(m) != "" {
			stop = m
		}
	}
	if stop.TS == "" {
		t.Fatal("no Stop button while the turn runs")
	}
	env := h.slack.ClickButton(stopClick("U7", "C1", root, stop))
	if _, err := h.slack.WaitAck(h.ctx(), env); err != nil {
		t.Fatal(err)
	}
	if lines := h.waitTurns(1); lines[0]["outcome"] != outcomeStopped {
		t.Fatalf("outcome %v, want stopped", lines[0]["outcome"])
	}
	for _, m := range h.slack.Snapshot().BotMessages("C1", root, slacktest.DefaultBotID) {
		if stopValue(m) != "" {
			t.Errorf("the Stop button is still shown after the turn ended")
		}
	}
}

func TestStreamResumesAfterRestart(t *testing.T) {
	srv, store := restartWorld(t)
	key := cutTurn(t, srv, store, "what is this", session.TurnRunning, false)
	// The dead process had started streaming the turn.
	old := deadStream(t, srv, key)
	if err := store.AddPart(t.Context(), "cut1", 0, streamPartPrefix+old); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{slack: srv, store: store, stream: true, cfg: func(c *Config) { c.UI = UIStream }})
	h.waitTurns(1)
	st := h.slack.Snapshot()
	ms := streams(st, key.Thread)
	if len(ms) != 2 || ms[0].TS != old {
		t.Fatalf("%d streamed messages, want the cut one and a new one", len(ms))
	}
	if ms[0].Streaming {
		t.Error("the half-streamed message is left spinning")
	}
	if want := noteResuming + "\n\n**Answer** to: what is this"; ms[1].MarkdownText != want {
		t.Errorf("new message %q, want %q: the note, then the answer", ms[1].MarkdownText, want)
	}
	if n := len(st.CallsTo("chat.postMessage")); n != 0 {
		t.Errorf("%d chat.postMessage calls; the note goes into the stream", n)
	}
}

// A restart that finds the answer stored and its first part in a streamed
// message that was completed shows only the rest, after the note.
func TestStreamRestartShowsOnlyTheRest(t *testing.T) {
	srv, store := restartWorld(t)
	key := cutTurn(t, srv, store, "what is this", session.TurnRunning, false)
	first, second := "First paragraph.\n\n", "Second paragraph."
	if err := store.AppendStep(t.Context(), "cut1", []llm.Message{{Role: llm.RoleAssistant, Content: first + second}}, llm.Usage{}); err != nil {
		t.Fatal(err)
	}
	api := srv.Client()
	tss := []string{deadStream(t, srv, key), deadStream(t, srv, key)}
	// The first message was full with the first paragraph and completed;
	// the second was open when the process died.
	if _, _, err := api.AppendStreamContext(t.Context(), "C1", tss[0], slack.MsgOptionMarkdownText(first)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.StopStreamContext(t.Context(), "C1", tss[0]); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{streamPartPrefix + tss[0], doneRecord(tss[0], first), streamPartPrefix + tss[1]} {
		if err := store.AddPart(t.Context(), "cut1", i, p); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, harnessOpts{slack: srv, store: store, stream: true, cfg: func(c *Config) { c.UI = UIStream }})
	h.waitTurns(1)
	ms := streams(h.slack.Snapshot(), key.Thread)
	if len(ms) != 3 || ms[1].Streaming {
		t.Fatalf("%d streamed messages (second streaming: %v), want the two cut ones closed and a new one", len(ms), len(ms) > 1 && ms[1].Streaming)
	}
	if got := ms[2].MarkdownText; got != noteResuming+"\n\n"+second {
		t.Errorf("new message %q, want the note and the second paragraph only", got)
	}
}

// deadStream starts a streamed message in key's thread as a process that
// died mid-turn did, and returns its ts.
func deadStream(t *testing.T, srv *slacktest.Server, key session.Key) string {
	t.Helper()
	_, ts, err := srv.Client().StartStreamContext(t.Context(), "C1", slack.MsgOptionTS(key.Thread),
		slack.MsgOptionRecipientUserID("U1"), slack.MsgOptionRecipientTeamID(key.Team))
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// A code block longer than a message is closed at the cut and opened again
// with its language in the next, so both render it as code.
func TestStreamedLongCodeBlock(t *testing.T) {
	var b strings.Builder
	b.WriteString("Here it is:\n\n```go\n")
	for i := range 700 {
		fmt.Fprintf(&b, "x%03d := compute(%d) // step\n", i, i)
	}
	b.WriteString("```\n\nThat is all.")
	answer := b.String()
	script := answering(answer)
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "long code", "")
	h.waitTurns(1)
	ms := streams(h.slack.Snapshot(), root)
	if len(ms) != 2 {
		t.Fatalf("%d streamed messages, want 2", len(ms))
	}
	if !strings.HasSuffix(ms[0].MarkdownText, "\n```") || !strings.HasPrefix(ms[1].MarkdownText, "```go\n") {
		t.Fatalf("cut code block: first ends %q, second starts %q", tail(ms[0].MarkdownText, 20), ms[1].MarkdownText[:min(20, len(ms[1].MarkdownText))])
	}
	joined := ms[0].MarkdownText + ms[1].MarkdownText
	if got := strings.Replace(joined, "```"+"```go\n", "", 1); got != answer {
		t.Errorf("the code block lost or doubled text across the cut")
	}
	for i, m := range ms {
		if n := render.StreamLen(m.MarkdownText); n > render.MaxStreamChars {
			t.Errorf("message %d has %d characters", i, n)
		}
	}
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// answering is readThenAnswer answering with answer.
func answering(answer string) llmtest.Script {
	return func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if r.Last().Role == "tool" {
			rep.Content = answer
		}
		return rep
	}
}

// The feedback buttons the stream ends with rate the turn as those under a
// posted answer do.
func TestStreamedAnswerFeedback(t *testing.T) {
	h := newHarness(t, streamed(readThenAnswer, nil))
	root := h.mention("C1", "what is this", "")
	h.waitTurns(1)
	h.waitReaction("C1", root, reactDone)
	turnID := h.logLines("turn")[0]["turn"].(string)
	m := streams(h.slack.Snapshot(), root)[0]
	click(t, h.slack, slacktest.FeedbackClick{User: "U1", Channel: "C1", MessageTS: m.TS, Positive: true})
	waitLog(t, h, "feedback recorded", 1)
	diff(t, "after 👍 on the streamed answer", []session.Feedback{{TurnID: turnID, User: "U1", Rating: session.RatingUp}}, feedbackOf(t, h.store))
}

// A streamed turn is traced as a posted one: its stream calls are spans
// under the turn's.
func TestStreamedTurnIsTraced(t *testing.T) {
	rec := tracingtest.New(t)
	tr, err := tracing.New(t.Context(), tracing.Config{Endpoint: rec.Endpoint(), Model: "fake-model"})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, streamed(readThenAnswer, func(c *Config) { c.Tracer = tr }))
	root := h.mention("C1", "what is this", "")
	h.waitTurns(1)
	h.waitReaction("C1", root, reactDone)
	count, turnSpan := tracedSpans(t, h, tr, rec)
	if count["invoke_agent"] != 1 || count["chat.startStream"] != 1 || count["chat.appendStream"] < 1 || count["chat.stopStream"] != 1 {
		t.Fatalf("spans %v; want the turn with one chat.startStream, its appends and one chat.stopStream", count)
	}
	for _, s := range rec.Spans() {
		if strings.HasPrefix(s.Name, "chat.") && strings.Contains(s.Name, "Stream") && (s.TraceID != turnSpan.TraceID || s.Parent != turnSpan.SpanID) {
			t.Errorf("span %q is not a child of the turn's span", s.Name)
		}
	}
}
