package budget

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askrepo/askrepo/internal/agent"
	"github.com/askrepo/askrepo/internal/llm"
)

func estDefault(m []llm.Message) int { return EstimateTokens(m, nil) }

// fixture builds a thread of turns: each has a question, calls tool steps
// with one result of resultLines lines each, and an answer of answerBytes.
func fixture(turns, calls, resultLines, answerBytes int) []llm.Message {
	var h []llm.Message
	for t := range turns {
		h = append(h, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("question %d: where is X?\nsecond line", t)})
		for c := range calls {
			id := fmt.Sprintf("call_%d_%d", t, c)
			var body strings.Builder
			for l := range resultLines {
				fmt.Fprintf(&body, "%d\tline %d of file %d in turn %d\n", l+1, l, c, t)
			}
			h = append(h,
				llm.Message{Role: llm.RoleAssistant, Reasoning: "look", ToolCalls: []llm.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"dir/f%d.go","offset":1}`, c)}}},
				llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: body.String()},
			)
		}
		h = append(h, llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("answer %d first line\n", t) + strings.Repeat("x", answerBytes)})
	}
	return h
}

// checkPairing fails unless every tool call has exactly one result after it
// and every result answers an earlier call.
func checkPairing(t *testing.T, h []llm.Message) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range h {
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
		if m.Role == llm.RoleTool {
			if !open[m.ToolCallID] {
				t.Errorf("message %d answers call %q, which no earlier assistant message made (or was answered twice)", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	for id := range open {
		t.Errorf("tool call %q has no result", id)
	}
}

func questionsAndAnswers(h []llm.Message) []string {
	var out []string
	for _, m := range h {
		if m.Role == llm.RoleUser || (m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 && !strings.HasPrefix(m.Content, summaryPrefix)) {
			out = append(out, m.Content)
		}
	}
	return out
}

func TestCompact(t *testing.T) {
	cases := []struct {
		name      string
		history   []llm.Message
		budget    func(total int) int
		verbatim  bool // every question and answer kept verbatim
		summarise bool // the oldest turns become a note
		check     func(t *testing.T, in, out []llm.Message)
	}{
		{
			name:     "elides oldest tool results first",
			history:  fixture(4, 1, 120, 40),
			budget:   func(total int) int { return total - 1 },
			verbatim: true,
			check: func(t *testing.T, in, out []llm.Message) {
				if len(out) != len(in) {
					t.Fatalf("len = %d; want %d (eliding keeps every message)", len(out), len(in))
				}
				want := "[elided: read_file dir/f0.go offset=1 returned 120 lines; call the tool again if you need it]"
				if out[2].Content != want {
					t.Errorf("oldest tool result = %q; want %q", out[2].Content, want)
				}
				// Elided results form a prefix: no newer one before an older one.
				seenKept := false
				for i, m := range out {
					if m.Role != llm.RoleTool {
						continue
					}
					elided := strings.HasPrefix(m.Content, elidedPrefix)
					if elided && seenKept {
						t.Errorf("tool result %d was elided while an older one was kept", i)
					}
					if !elided {
						seenKept = true
						if m.Content != in[i].Content {
							t.Errorf("kept tool result %d changed", i)
						}
					}
				}
				if last := out[len(out)-2]; strings.HasPrefix(last.Content, elidedPrefix) {
					t.Error("the newest tool result was elided though older ones sufficed")
				}
			},
		},
		{
			name: "stub names the error of a failed call and copes with bad arguments",
			history: []llm.Message{
				{Role: llm.RoleUser, Content: "q"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "search_code", Arguments: `{"pattern":"func main","literal":true}`}, {ID: "b", Name: "read_file", Arguments: `{oops`}}},
				{Role: llm.RoleTool, ToolCallID: "a", Content: strings.Repeat("no match\n", 300), IsError: true},
				{Role: llm.RoleTool, ToolCallID: "b", Content: strings.Repeat("y", 3000)},
				{Role: llm.RoleAssistant, Content: "done"},
			},
			budget:   func(total int) int { return 200 },
			verbatim: true,
			check: func(t *testing.T, in, out []llm.Message) {
				want := []string{
					`[elided: search_code "func main" literal=true failed with 300 lines; call the tool again if you need it]`,
					`[elided: read_file returned 1 line; call the tool again if you need it]`,
				}
				if d := cmp.Diff(want, []string{out[2].Content, out[3].Content}); d != "" {
					t.Errorf("stubs (-want +got):\n%s", d)
				}
				if !out[2].IsError {
					t.Error("IsError lost on an elided result")
				}
			},
		},
		{
			name:     "drops old tool steps when stubs are not enough",
			history:  fixture(5, 30, 4, 40),
			budget:   func(total int) int { return total / 2 },
			verbatim: true,
			check: func(t *testing.T, in, out []llm.Message) {
				starts := turnStarts(out)
				if got := starts[1] - starts[0]; got != 2 {
					t.Errorf("oldest turn has %d messages; want 2 (question and answer, its tool steps dropped)", got)
				}
				last := starts[4]
				for i, m := range out[:last] {
					if m.Role == llm.RoleTool && !strings.HasPrefix(m.Content, elidedPrefix) {
						t.Errorf("message %d: an old tool result survived whole though steps had to be dropped", i)
					}
				}
				for i := last; i < len(out); i++ {
					if out[i].Content != in[i-last+turnStarts(in)[4]].Content {
						t.Errorf("current turn message %d changed; its results go only as a last resort", i)
					}
				}
				if got, want := len(out[last:]), 1+2*30+1; got != want {
					t.Errorf("last turn has %d messages; want %d (never dropped)", got, want)
				}
			},
		},
		{
			name:     "a single turn stubs its own results oldest first as a last resort",
			history:  fixture(1, 10, 50, 40),
			budget:   func(total int) int { return total - 1 },
			verbatim: true,
			check: func(t *testing.T, in, out []llm.Message) {
				if !strings.HasPrefix(out[2].Content, elidedPrefix) {
					t.Error("the oldest result of the turn was kept")
				}
				if got := out[len(out)-2].Content; got != in[len(in)-2].Content {
					t.Error("the newest result was elided though older ones sufficed")
				}
			},
		},
		{
			name:      "summarises the oldest turns when answers alone are too large",
			history:   fixture(6, 2, 10, 3000),
			budget:    func(total int) int { return total / 3 },
			summarise: true,
			check: func(t *testing.T, in, out []llm.Message) {
				note := out[0]
				if note.Role != llm.RoleAssistant || !strings.HasPrefix(note.Content, summaryPrefix) {
					t.Fatalf("first message = %+v; want the summary note", note)
				}
				for _, want := range []string{"- Q: question 0: where is X?", "  A: answer 0 first line", "- Q: question 1: where is X?"} {
					if !strings.Contains(note.Content, want+"\n") {
						t.Errorf("note lacks %q:\n%s", want, note.Content)
					}
				}
				starts := turnStarts(in)
				lastTurn := in[starts[len(starts)-1]:]
				if d := cmp.Diff(lastTurn, out[len(out)-len(lastTurn):]); d != "" {
					t.Errorf("last turn changed (-want +got):\n%s", d)
				}
			},
		},
		{
			name: "the summary keeps the session context and lists the first question without it",
			history: func() []llm.Message {
				h := fixture(6, 2, 10, 3000)
				h[0].Content = testPreamble + "how are refunds retried?\nsecond line"
				return h
			}(),
			budget:    func(total int) int { return total / 3 },
			summarise: true,
			check: func(t *testing.T, in, out []llm.Message) {
				want := summaryPrefix + "\n" + strings.TrimSpace(testPreamble) + "\n- Q: how are refunds retried?\n"
				if !strings.HasPrefix(out[0].Content, want) {
					t.Errorf("note =\n%s\nwant it to start with\n%s", out[0].Content, want)
				}
			},
		},
		{
			name:     "a loop note does not end the turn it interrupts",
			history:  withNotedTurn(fixture(3, 30, 4, 40), 3, 4),
			budget:   func(total int) int { return total / 2 },
			verbatim: true,
			check: func(t *testing.T, in, out []llm.Message) {
				// The step-limit note asks for the answer now: the tool work
				// of the turn it interrupts is what the answer is made from.
				cur := currentQuestion(t, out)
				if d := cmp.Diff(in[currentQuestion(t, in):], out[cur:]); d != "" {
					t.Errorf("the interrupted turn changed (-want +got):\n%s", d)
				}
			},
		},
		{
			name: "summarising stops at the turn a note interrupts and lists no note as a question",
			history: func() []llm.Message {
				h := fixture(3, 1, 10, 3000)
				// An earlier turn that ended on the step limit too.
				h = slices.Insert(h, 4, llm.Message{Role: llm.RoleUser, Content: llm.NoteTag + "The limit of 1 steps is reached. Answer now."})
				return withNotedTurn(h, 6, 300)
			}(),
			budget:    func(total int) int { return 2000 },
			summarise: true,
			check: func(t *testing.T, in, out []llm.Message) {
				if strings.Contains(out[0].Content, llm.NoteTag) {
					t.Errorf("the summary lists a loop note as a question:\n%s", out[0].Content)
				}
				cur := currentQuestion(t, out)
				if got := out[cur].Content; got != in[currentQuestion(t, in)].Content {
					t.Errorf("current question = %q; want it verbatim", got)
				}
				calls := 0
				for _, m := range out[cur:] {
					calls += len(m.ToolCalls)
				}
				if calls != 6 {
					t.Errorf("the interrupted turn keeps %d tool calls; want all 6", calls)
				}
				if last := out[len(out)-1]; !llm.IsNote(last) {
					t.Errorf("last message = %q; want the note", last.Content)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := cloneMessages(tc.history)
			total := estDefault(in)
			budget := tc.budget(total)
			out, changed := Compact(in, budget, estDefault)
			if !changed {
				t.Fatalf("Compact over budget (%d > %d) reported no change", total, budget)
			}
			if d := cmp.Diff(tc.history, in); d != "" {
				t.Errorf("Compact modified its input (-before +after):\n%s", d)
			}
			if got, target := estDefault(out), int(float64(budget)*CompactTarget); got > target {
				t.Errorf("result is %d tokens; want at most the target %d", got, target)
			}
			checkPairing(t, out)
			if tc.verbatim {
				if d := cmp.Diff(questionsAndAnswers(in), questionsAndAnswers(out)); d != "" {
					t.Errorf("questions and answers not kept verbatim (-want +got):\n%s", d)
				}
			}
			if got := strings.HasPrefix(out[0].Content, summaryPrefix); got != tc.summarise {
				t.Errorf("summarised = %v; want %v", got, tc.summarise)
			}
			again, _ := Compact(cloneMessages(tc.history), budget, estDefault)
			if d := cmp.Diff(out, again); d != "" {
				t.Errorf("Compact is not deterministic (-first +second):\n%s", d)
			}
			if _, changed := Compact(out, budget, estDefault); changed {
				t.Error("compacting the compacted history again changed it; it is under budget")
			}
			tc.check(t, in, out)
		})
	}
}

// withNotedTurn appends a current turn that is being finished after the
// step limit: its question, calls tool steps with resultLines-line results,
// no answer yet, then the loop's note asking for one.
func withNotedTurn(h []llm.Message, calls, resultLines int) []llm.Message {
	cur := fixture(1, calls, resultLines, 0)
	cur = cur[:len(cur)-1]
	for i := range cur {
		cur[i].Content = strings.ReplaceAll(cur[i].Content, "turn 0", "the current turn")
		if cur[i].ToolCallID != "" {
			cur[i].ToolCallID = "cur_" + cur[i].ToolCallID
		}
		for j := range cur[i].ToolCalls {
			cur[i].ToolCalls[j].ID = "cur_" + cur[i].ToolCalls[j].ID
		}
	}
	cur[0].Content = "CURRENT: how does retry work?"
	note := llm.Message{Role: llm.RoleUser, Content: llm.NoteTag + "The limit of 6 steps for this question is reached and tools are no longer available. Answer now with what you have found so far."}
	return slices.Concat(h, cur, []llm.Message{note})
}

// currentQuestion is the index of withNotedTurn's question in h.
func currentQuestion(t *testing.T, h []llm.Message) int {
	t.Helper()
	i := slices.IndexFunc(h, func(m llm.Message) bool { return strings.HasPrefix(m.Content, "CURRENT: ") })
	if i < 0 {
		t.Fatal("the current question is gone")
	}
	return i
}

func TestCompactUnderBudgetIsNoOp(t *testing.T) {
	h := fixture(3, 2, 50, 100)
	for _, budget := range []int{estDefault(h), estDefault(h) * 10} {
		out, changed := Compact(h, budget, estDefault)
		if changed || &out[0] != &h[0] || len(out) != len(h) {
			t.Errorf("budget %d: Compact under budget returned changed=%v or a new slice; want the same slice", budget, changed)
		}
	}
}

// testPreamble is the context block the agent puts before a session's first
// question.
var testPreamble = agent.ContextPreamble("payments", "0123456789abcdef", time.Date(2026, 3, 4, 5, 6, 0, 0, time.UTC), "U1")

func TestCompactSummaryCarriesEarlierNote(t *testing.T) {
	h := fixture(6, 1, 5, 3000)
	h[0].Content = testPreamble + h[0].Content
	once, _ := Compact(h, estDefault(h)/3, estDefault)
	// The thread goes on, grows past the budget again, and is compacted again.
	grown := append(cloneMessages(once), fixture(4, 1, 5, 3000)[0:]...)
	for i := len(once); i < len(grown); i++ {
		grown[i].Content = strings.Replace(grown[i].Content, "question ", "later question ", 1)
	}
	twice, _ := Compact(grown, estDefault(once), estDefault)
	if !strings.Contains(twice[0].Content, "- Q: question 0: where is X?") || !strings.Contains(twice[0].Content, "- Q: later question 0: where is X?") {
		t.Errorf("second summary lost the first one's list:\n%s", twice[0].Content)
	}
	if n := strings.Count(twice[0].Content, "<context>"); n != 1 || !strings.Contains(twice[0].Content, "commit: 0123456789abcdef\n") {
		t.Errorf("second summary has %d context blocks; want the first question's, once:\n%s", n, twice[0].Content)
	}
	if strings.Count(twice[0].Content, summaryPrefix) != 1 {
		t.Errorf("summary notes nested:\n%s", twice[0].Content)
	}
	checkPairing(t, twice)
}

func TestEstimateTokens(t *testing.T) {
	msgs := []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("a", 3500-messageOverheadBytes)}}
	if got := EstimateTokens(msgs, nil); got != 1000 {
		t.Errorf("EstimateTokens(3500 bytes) = %d; want 1000 at %.1f bytes/token", got, DefaultBytesPerToken)
	}
	tools := []llm.ToolSpec{{Name: "read_file", Description: strings.Repeat("d", 700), Parameters: []byte(`{"type":"object"}`)}}
	if EstimateTokens(msgs, tools) <= 1000 {
		t.Error("tool definitions are not counted")
	}
	withCalls := []llm.Message{{Role: llm.RoleAssistant, Reasoning: strings.Repeat("r", 350), ToolCalls: []llm.ToolCall{{ID: "c", Name: "n", Arguments: strings.Repeat("x", 350)}}}}
	if got := EstimateTokens(withCalls, nil); got < 200 {
		t.Errorf("EstimateTokens counts %d tokens for 700 bytes of reasoning and arguments; want ≥ 200", got)
	}
}

func TestCalibratorConverges(t *testing.T) {
	var c Calibrator
	if f := c.Factor("m"); f != 1 {
		t.Fatalf("Factor before any observation = %v; want 1", f)
	}
	// deepseek's tokenizer packs code denser than our ratio: truth 1.3 with
	// ±5% noise; qwen's looser: 0.8. Garbage pairs are ignored.
	for i := range 60 {
		noise := 1 + 0.05*math.Sin(float64(i))
		est := 2000 + 37*i
		c.Observe("deepseek", est, int(float64(est)*1.3*noise))
		c.Observe("qwen", est, int(float64(est)*0.8*noise))
		c.Observe("deepseek", est, 0)        // not reported
		c.Observe("deepseek", 10, 1000)      // too small to say anything
		c.Observe("deepseek", est, est*1000) // a reporting bug
	}
	for model, want := range map[string]float64{"deepseek": 1.3, "qwen": 0.8, "unseen": 1} {
		if got := c.Factor(model); math.Abs(got-want)/want > 0.03 {
			t.Errorf("Factor(%s) = %.3f; want %.2f ±3%%", model, got, want)
		}
	}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("a", 35000)}}
	base := EstimateTokens(msgs, nil)
	if got := c.Estimate("deepseek", msgs, nil); math.Abs(float64(got)/float64(base)-1.3) > 0.04 {
		t.Errorf("calibrated estimate %d vs raw %d; want about 1.3×", got, base)
	}
	if got := c.Estimator("qwen", nil)(msgs); got >= base {
		t.Errorf("Estimator(qwen) = %d; want below the raw %d", got, base)
	}
}

func TestCalibratorConcurrent(t *testing.T) {
	var c Calibrator
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Observe("m", 1000, 1200)
				_ = c.Factor("m")
			}
		})
	}
	wg.Wait()
	if f := c.Factor("m"); math.Abs(f-1.2) > 1e-9 {
		t.Errorf("Factor = %v; want 1.2", f)
	}
}

func TestDefaultBudget(t *testing.T) {
	tests := []struct {
		model string
		want  int
	}{
		{"gpt-4.1-mini", 120_000},
		{"gpt-4o-2024-08-06", 76_800},
		{"openai/gpt-4o", 76_800},
		{"qwen2.5-coder:7b", 19_660},
		{"Qwen3-32B", 19_660},
		{"some-local-model", 60_000},
	}
	for _, tt := range tests {
		if got := DefaultBudget(tt.model); got != tt.want {
			t.Errorf("DefaultBudget(%q) = %d, want %d", tt.model, got, tt.want)
		}
	}
}

func TestCompactor(t *testing.T) {
	var c Calibrator
	hist := []llm.Message{
		{Role: llm.RoleSystem, Content: "system"},
		{Role: llm.RoleUser, Content: "q1"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "read_file", Arguments: `{"path":"a.go"}`}}},
		{Role: llm.RoleTool, ToolCallID: "1", Content: strings.Repeat("line\n", 2000)},
		{Role: llm.RoleAssistant, Content: "a1"},
		{Role: llm.RoleUser, Content: "q2"},
	}
	tools := []llm.ToolSpec{{Name: "read_file", Description: "reads", Parameters: []byte(`{}`)}}
	tests := []struct {
		name    string
		budget  int
		changed bool
	}{
		{"off", 0, false},
		{"under budget", 100_000, false},
		{"over budget", 1_000, true},
	}
	for _, tt := range tests {
		out, changed := c.Compactor("m", tt.budget)(hist, tools)
		if changed != tt.changed {
			t.Errorf("%s: changed = %v, want %v", tt.name, changed, tt.changed)
		}
		if changed && !strings.HasPrefix(out[3].Content, elidedPrefix) {
			t.Errorf("%s: tool result = %.30q, want it elided", tt.name, out[3].Content)
		}
		if !changed && len(out) != len(hist) {
			t.Errorf("%s: unchanged output differs", tt.name)
		}
	}
}
