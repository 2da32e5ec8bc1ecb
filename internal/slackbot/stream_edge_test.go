package slackbot

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askrepo/askrepo/internal/llm/llmtest"
	"github.com/askrepo/askrepo/internal/session"
	"github.com/askrepo/askrepo/internal/slackbot/slacktest"
	"github.com/askrepo/askrepo/internal/turn"
)

// A stop of an agent session reaches only the turn of that session, and
// only from someone who may ask.
func TestStreamSessionStopIgnoresOthers(t *testing.T) {
	tests := []struct {
		name         string
		cfg          func(*Config)
		user, thread string // thread "" is the turn's
	}{
		{"user not allowed", func(c *Config) { c.AllowUsers = []string{"U1"} }, "U9", ""},
		{"another thread", nil, "U1", "1700000099.000100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hold := newGate()
			t.Cleanup(hold.open)
			h := newHarness(t, streamed(heldAnswer(hold), tt.cfg))
			root := h.mention("C1", "a long question", "")
			waitCards(t, h, root, 2)
			thread := tt.thread
			if thread == "" {
				thread = root
			}
			env := h.slack.AgentSessionStopped("C1", thread, tt.user)
			if _, err := h.slack.WaitAck(h.ctx(), env); err != nil {
				t.Fatal(err)
			}
			hold.open()
			if lines := h.waitTurns(1); lines[0]["outcome"] != outcomeAnswered {
				t.Fatalf("outcome %v, want answered", lines[0]["outcome"])
			}
		})
	}
}

func TestStreamAppendRateLimited(t *testing.T) {
	h := newHarness(t, streamed(readThenAnswer, nil))
	h.slack.FailNext("chat.appendStream", slacktest.RateLimited(time.Millisecond))
	root := h.mention("C1", "q", "")
	h.waitTurns(1)
	m := streams(h.slack.Snapshot(), root)[0]
	if len(m.Tasks()) != 2 || m.MarkdownText != "**Answer** to: q" {
		t.Fatalf("after a 429: cards %+v, text %q; want nothing lost", m.Tasks(), m.MarkdownText)
	}
	if !strings.Contains(h.metrics(), `askrepo_slack_api_ratelimited_total{method="chat.appendStream"} 1`) {
		t.Errorf("429 not counted:\n%s", grepLines(h.metrics(), "ratelimited"))
	}
}

// What the model writes before asking for tools stays, before their cards;
// the answer follows it, apart.
func TestStreamNarrationThenAnswer(t *testing.T) {
	script := func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if r.Last().Role != "tool" {
			rep.Content = "Let me read `README.md:1`."
		}
		return rep
	}
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "q", "")
	h.waitTurns(1)
	m := streams(h.slack.Snapshot(), root)[0]
	if want := "Let me read `README.md:1`.\n\n**Answer** to: q"; m.MarkdownText != want {
		t.Fatalf("text %q, want %q", m.MarkdownText, want)
	}
	if first, _ := m.Chunks[0]["type"].(string); first != "markdown_text" {
		t.Errorf("first chunk %q, want the text written before the calls", first)
	}
}

// A model stream that breaks halfway is asked again; the text it had
// shown is not shown twice.
func TestStreamModelRetryShowsTextOnce(t *testing.T) {
	var answers atomic.Int32
	script := func(r llmtest.Request) llmtest.Reply {
		rep := readThenAnswer(r)
		if r.Last().Role == "tool" {
			rep.Content = "Para one.\n\nPara two."
			if answers.Add(1) == 1 {
				rep = llmtest.Reply{Content: "Para one.\n\nPara tw", Cut: true}
			}
		}
		return rep
	}
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "q", "")
	if lines := h.waitTurns(1); lines[0]["outcome"] != outcomeAnswered {
		t.Fatalf("outcome %v", lines[0]["outcome"])
	}
	if got := streamedText(streams(h.slack.Snapshot(), root)); got != "Para one.\n\nPara two." {
		t.Fatalf("streamed %q", got)
	}
}

func TestStreamPlanModeInDM(t *testing.T) {
	h := newHarness(t, streamed(readThenAnswer, func(c *Config) { c.Tasks = TasksPlan }))
	root := h.slack.NextTS()
	h.slack.SendEvent(slacktest.UserMessage("D1", "im", "U1", "what is here?", root, ""))
	h.waitTurns(1)
	st := h.slack.Snapshot()
	var m slacktest.Message
	for _, x := range st.BotMessages("D1", root, slacktest.DefaultBotID) {
		if x.Via == "chat.startStream" {
			m = x
		}
	}
	if m.TaskDisplayMode != TasksPlan || m.Recipient != "" || len(m.Tasks()) != 2 {
		t.Fatalf("DM stream: mode %q, recipient %q, %d cards", m.TaskDisplayMode, m.Recipient, len(m.Tasks()))
	}
}

// A stream Slack refuses to append to for good still answers: as messages,
// once.
func TestStreamBrokenAnswersAsMessages(t *testing.T) {
	h := newHarness(t, streamed(readThenAnswer, nil))
	h.slack.FailAlways("chat.appendStream", slacktest.SlackError("invalid_chunks"))
	root := h.mention("C1", "q", "")
	if lines := h.waitTurns(1); lines[0]["outcome"] != outcomeAnswered {
		t.Fatalf("outcome %v", lines[0]["outcome"])
	}
	st := h.slack.Snapshot()
	if a := answers(st.BotMessages("C1", root, slacktest.DefaultBotID)); len(a) != 1 || !strings.Contains(a[0].AllText(), "**Answer** to: q") {
		t.Fatalf("answers %q, want one, posted", allTexts(a))
	}
	if ms := streams(st, root); len(ms) != 1 || ms[0].Streaming {
		t.Errorf("the broken stream is left open")
	}
}

// A turn that fails closes its stream and says why, as in the message UI.
func TestStreamFailedTurn(t *testing.T) {
	script := func(r llmtest.Request) llmtest.Reply {
		if r.Last().Role == "tool" {
			return llmtest.Error(400, "context length exceeded")
		}
		return readThenAnswer(r)
	}
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "q", "")
	if lines := h.waitTurns(1); lines[0]["outcome"] == outcomeAnswered {
		t.Fatal("a failed turn answered")
	}
	st := h.slack.Snapshot()
	ms := streams(st, root)
	if len(ms) != 1 || ms[0].Streaming {
		t.Fatalf("stream left open after a failure")
	}
	bot := st.BotMessages("C1", root, slacktest.DefaultBotID)
	if !slices.ContainsFunc(bot, func(m slacktest.Message) bool { return strings.Contains(m.Text, "ref:") }) {
		t.Errorf("no failure sentence with a reference: %q", allTexts(bot))
	}
}

// A session stop delivered to the replica not running the turn reaches it
// through the store.
func TestStreamSessionStopOnTheOtherReplica(t *testing.T) {
	hold := newGate()
	t.Cleanup(hold.open)
	p := newReplicaPair(t, heldAnswer(hold), func(_ string, c *Config) { c.UI = UIStream })
	root := p.mention(t, p.connA, "C1", "a long question")
	m := waitCards(t, p.a, root, 2)
	p.a.slack.CloseStream("C1", m.TS) // Slack halts the stream it names
	p.send(t, p.connB, slacktest.SessionStopped("C1", root, "U7", m.TS))
	if lines := p.a.waitTurns(1); lines[0]["outcome"] != outcomeStopped {
		t.Fatalf("outcome %v, want stopped", lines[0]["outcome"])
	}
	if n := len(p.b.logLines("stop clicked for a turn running on another replica; passed on")); n != 1 {
		t.Errorf("replica b passed %d stops on, want 1", n)
	}
}

// A card's title is the model's arguments: a mention token in them pings
// no one.
func TestStreamCardTitleNeutralised(t *testing.T) {
	script := func(r llmtest.Request) llmtest.Reply {
		if r.Last().Role == "tool" {
			return llmtest.Reply{Content: "done"}
		}
		return llmtest.Reply{Calls: []llmtest.Call{{Name: "read_file", Args: `{"path":"<!channel> <@U1>.md"}`}}}
	}
	h := newHarness(t, streamed(script, nil))
	root := h.mention("C1", "q", "")
	h.waitTurns(1)
	tasks := streams(h.slack.Snapshot(), root)[0].Tasks()
	if len(tasks) != 1 || strings.Contains(tasks[0].Title, "<!channel>") || strings.Contains(tasks[0].Title, "<@U1>") ||
		strings.Contains(tasks[0].Details, "<!channel>") {
		t.Fatalf("card %+v carries a live mention", tasks)
	}
}

// A turn that fails before anything is shown leaves no empty streamed
// message above the reason.
func TestStreamEmptyFailureLeavesNoMessage(t *testing.T) {
	h := newHarness(t, streamed(func(llmtest.Request) llmtest.Reply {
		return llmtest.Error(400, "context length exceeded")
	}, nil))
	root := h.mention("C1", "q", "")
	h.waitTurns(1)
	st := h.slack.Snapshot()
	if ms := streams(st, root); len(ms) != 0 {
		t.Errorf("%d empty streamed messages left in the thread", len(ms))
	}
	if bot := st.BotMessages("C1", root, slacktest.DefaultBotID); len(bot) != 1 || !strings.Contains(bot[0].Text, "ref:") {
		t.Errorf("thread %q, want the reason alone", allTexts(bot))
	}
}

// A message Slack closed is continued in a new one while the turn runs,
// not after it ended: then Slack closed it because the turn was stopped,
// or the process that took the turn over did.
func TestStreamClosedContinuesOnlyWhileTurnRuns(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ended bool
		want  int // streamed messages started
	}{
		{"turn running", false, 2},
		{"turn ended", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, streamed(readThenAnswer, nil))
			root := h.slack.Reply("C1", "U1", "q", "")
			in := inbound{Key: session.Key{Team: slacktest.DefaultTeamID, Channel: "C1", Thread: root}, User: "U1", TS: root}
			turnCtx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := h.bot.startStream(h.ctx(), turnCtx, in, "t1", nil, "", h.bot.log)
			if err != nil {
				t.Fatal(err)
			}
			h.slack.CloseStream("C1", s.ts)
			if tt.ended {
				cancel()
			}
			s.ToolStarted(turn.Call{Step: 1, ID: "c1", Name: "read_file", Brief: "README.md"})
			s.close()
			if n := len(h.slack.Snapshot().CallsTo("chat.startStream")); n != tt.want {
				t.Errorf("%d streamed messages started, want %d", n, tt.want)
			}
		})
	}
}
