package session

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/llm"
)

// DefaultBytesPerToken is the bytes-per-token ratio EstimateTokens assumes.
// Measured with o200k on a Go repository: Go 3.68, Markdown 3.71, JSON 3.23
// bytes per token; 3.5 errs on the side of over-counting, which is the safe
// side for a budget. Other tokenizers (DeepSeek, Qwen, Llama) differ, which
// is what Calibrator corrects.
const DefaultBytesPerToken = 3.5

// messageOverheadBytes stands for the framing each message costs (role,
// separators, the call id of a tool result): about four tokens.
const messageOverheadBytes = 14

// EstimateTokens estimates the prompt tokens of a request with msgs and tools
// from their byte size. It is deliberately cheap (no tokenizer, no
// allocation) so it can run before every request; calibrate it per model
// with a Calibrator.
func EstimateTokens(msgs []llm.Message, tools []llm.ToolSpec) int {
	return int(math.Ceil(float64(estimateBytes(msgs, tools)) / DefaultBytesPerToken))
}

func estimateBytes(msgs []llm.Message, tools []llm.ToolSpec) int {
	n := 0
	for _, m := range msgs {
		n += messageOverheadBytes + len(m.Content) + len(m.Reasoning) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += messageOverheadBytes + len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range tools {
		n += messageOverheadBytes + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// Calibrator learns, per model, how far EstimateTokens is from the prompt
// tokens the server reports, and scales estimates by that factor. It keeps
// an exponentially weighted average so it follows a change of model behind
// the same name without forgetting everything at once. Safe for concurrent
// use; the zero value is ready.
type Calibrator struct {
	mu      sync.Mutex
	factors map[string]float64 // reported / estimated
}

// Calibration bounds: observations on tiny prompts say little, and a factor
// outside the clamp means a reporting bug (0 tokens, a cumulative count),
// not a tokenizer.
const (
	calibrationWeight       = 0.2
	calibrationMinEstimated = 64
	calibrationMinFactor    = 0.25
	calibrationMaxFactor    = 4
)

// Observe records that a request estimated (by EstimateTokens) at estimated
// tokens was reported by the server as reported prompt tokens. Pairs too
// small or too far off to be trusted are ignored; a zero report (a server
// that reports nothing) is ignored too.
func (c *Calibrator) Observe(model string, estimated, reported int) {
	if estimated < calibrationMinEstimated || reported <= 0 {
		return
	}
	f := float64(reported) / float64(estimated)
	if f < calibrationMinFactor || f > calibrationMaxFactor {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.factors == nil {
		c.factors = make(map[string]float64)
	}
	old, ok := c.factors[model]
	if !ok {
		c.factors[model] = f
		return
	}
	c.factors[model] = old + calibrationWeight*(f-old)
}

// Factor is the model's current correction (1 until observed).
func (c *Calibrator) Factor(model string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.factors[model]; ok {
		return f
	}
	return 1
}

// Estimate is EstimateTokens corrected for model.
func (c *Calibrator) Estimate(model string, msgs []llm.Message, tools []llm.ToolSpec) int {
	return int(math.Ceil(float64(EstimateTokens(msgs, tools)) * c.Factor(model)))
}

// Estimator returns the estimate function Compact takes: the history's
// calibrated tokens plus those of the tool definitions sent with it.
func (c *Calibrator) Estimator(model string, tools []llm.ToolSpec) func([]llm.Message) int {
	return func(msgs []llm.Message) int { return c.Estimate(model, msgs, tools) }
}

// CompactTarget is the share of the budget Compact brings a history down to
// once it has passed the budget. Compaction rewrites the prefix and so costs
// one turn without prompt cache; landing well under the budget makes it rare.
const CompactTarget = 0.6

// elidedPrefix starts every stub Compact leaves in place of a tool result.
const elidedPrefix = "[elided: "

// summaryPrefix starts the note that replaces the oldest turns (see
// summaryNote).
const summaryPrefix = "[Earlier in this thread, summarised to save context. Ask again or re-run tools for details.]"

// Compact shrinks a history that est says is over budget tokens, down to at
// most CompactTarget of it, in steps that lose the least first:
//
//  1. the tool results of earlier turns, oldest first, are replaced by a
//     one-line stub naming the call (`[elided: read_file README.md returned
//     120 lines; call the tool again if you need it]`);
//  2. the tool steps of the oldest turns (assistant tool calls and their
//     results) are dropped, keeping each question and its final answer;
//  3. the oldest turns are replaced by one assistant note listing their
//     questions and the first line of their answers;
//  4. last, the current turn's own tool results are stubbed, oldest first:
//     they are what the model is working on, so they go only when the
//     rest of the thread cannot make room.
//
// Steps 1 and 2 keep every user question and final answer verbatim; the
// current (last) turn is never dropped or summarised. Every assistant tool
// call keeps its tool result, so the history stays valid for the API.
// If the current turn alone is over the target the result may stay over it.
//
// Compact is deterministic and a no-op (changed false, history returned as
// is) when est(history) <= budget, so between compactions the request
// prefix stays byte-identical and the provider's prompt cache keeps hitting.
// The input is never modified.
func Compact(history []llm.Message, budget int, est func([]llm.Message) int) (out []llm.Message, changed bool) {
	if est(history) <= budget {
		return history, false
	}
	target := int(float64(budget) * CompactTarget)
	out = cloneMessages(history)
	current := 0 // the last turn: its results are what the model works on now
	if starts := turnStarts(out); len(starts) > 0 {
		current = starts[len(starts)-1]
	}
	if elideToolResults(out, 0, current, target, est) {
		return out, true
	}
	if out = dropToolSteps(out, target, est); est(out) <= target {
		return out, true
	}
	if out = summariseTurns(out, target, est); est(out) <= target {
		return out, true
	}
	if starts := turnStarts(out); len(starts) > 0 {
		current = starts[len(starts)-1]
	}
	elideToolResults(out, current, len(out), target, est)
	return out, true
}

// elideToolResults stubs the tool results in msgs[from:to], oldest first,
// until est(msgs) <= target, and reports whether it got there.
func elideToolResults(msgs []llm.Message, from, to, target int, est func([]llm.Message) int) bool {
	calls := make(map[string]llm.ToolCall)
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
	}
	for i := from; i < to; i++ {
		m := msgs[i]
		if m.Role != llm.RoleTool || strings.HasPrefix(m.Content, elidedPrefix) {
			continue
		}
		stub := toolStub(calls[m.ToolCallID], m)
		if len(stub) >= len(m.Content) {
			continue
		}
		msgs[i].Content = stub
		if est(msgs) <= target {
			return true
		}
	}
	return false
}

// turnStarts returns the index of each question: a turn runs from one to
// the next. The loop's own notes (llm.NoteTag, "the step limit is reached,
// answer now") are user messages too, but they belong to the turn they
// interrupt: counting them as turns would make the turn being answered look
// finished, so its tool work would be elided, dropped or summarised while
// the model still needs it for the answer.
func turnStarts(msgs []llm.Message) []int {
	var starts []int
	for i, m := range msgs {
		if llm.IsQuestion(m) {
			starts = append(starts, i)
		}
	}
	return starts
}

// dropToolSteps removes the tool calls and results of whole turns, oldest
// first and never the last turn, until est(msgs) <= target.
func dropToolSteps(msgs []llm.Message, target int, est func([]llm.Message) int) []llm.Message {
	starts := turnStarts(msgs)
	if len(starts) < 2 {
		return msgs
	}
	isStep := func(m llm.Message) bool {
		return m.Role == llm.RoleTool || (m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0)
	}
	for k := 0; k < len(starts)-1; k++ {
		from, to := starts[k], starts[k+1]
		if !slices.ContainsFunc(msgs[from:to], isStep) {
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(msgs[from:to]), isStep)
		msgs = slices.Concat(msgs[:from], kept, msgs[to:])
		shift := (to - from) - len(kept)
		for j := k + 1; j < len(starts); j++ {
			starts[j] -= shift
		}
		if est(msgs) <= target {
			break
		}
	}
	return msgs
}

// summariseTurns replaces the oldest turns (never the last) by one note,
// growing the summarised prefix until est <= target.
func summariseTurns(msgs []llm.Message, target int, est func([]llm.Message) int) []llm.Message {
	starts := turnStarts(msgs)
	if len(starts) < 2 {
		return msgs
	}
	var best []llm.Message
	for k := 1; k < len(starts); k++ {
		end := starts[k] // summarise msgs[:end]
		var systems []llm.Message
		var lines []string
		preamble := "" // the first question's <context> block, kept whole
		for _, m := range msgs[:end] {
			switch {
			case m.Role == llm.RoleSystem:
				systems = append(systems, m)
			case m.Role == llm.RoleAssistant && strings.HasPrefix(m.Content, summaryPrefix):
				// An earlier note: carry its context and list over.
				block, rest := llm.SplitContext(strings.TrimPrefix(m.Content, summaryPrefix))
				if preamble == "" {
					preamble = block
				}
				for l := range strings.SplitSeq(rest, "\n") {
					if l != "" {
						lines = append(lines, l)
					}
				}
			case llm.IsNote(m):
				// The loop talking to the model, not a question.
			case m.Role == llm.RoleUser:
				block, question := llm.SplitContext(m.Content)
				if preamble == "" {
					preamble = block
				}
				lines = append(lines, "- Q: "+firstLine(question, 200))
			case m.Role == llm.RoleAssistant && len(m.ToolCalls) == 0 && m.Content != "":
				lines = append(lines, "  A: "+firstLine(m.Content, 200))
			}
		}
		note := llm.Message{Role: llm.RoleAssistant, Content: summaryNote(preamble, lines)}
		best = slices.Concat(systems, []llm.Message{note}, msgs[end:])
		if est(best) <= target {
			break
		}
	}
	return best
}

// summaryNote renders the note that replaces the oldest turns: the prefix,
// then the session's context block (which repository and commit the thread
// is about; it rode in the first question, which the note replaces, and
// the model needs it to cite and search the right code), then the list.
func summaryNote(preamble string, lines []string) string {
	var b strings.Builder
	b.WriteString(summaryPrefix + "\n")
	if preamble != "" {
		b.WriteString(preamble + "\n")
	}
	b.WriteString(strings.Join(lines, "\n"))
	return b.String()
}

// toolStub is the line left in place of an elided tool result, derived from
// the call that asked for it so the model knows what to re-run.
func toolStub(call llm.ToolCall, m llm.Message) string {
	what := "a tool call"
	if call.Name != "" {
		what = describeCall(call)
	}
	lines := strings.Count(m.Content, "\n")
	if m.Content != "" && !strings.HasSuffix(m.Content, "\n") {
		lines++
	}
	unit := "lines"
	if lines == 1 {
		unit = "line"
	}
	verb := "returned"
	if m.IsError {
		verb = "failed with"
	}
	return fmt.Sprintf("%s%s %s %d %s; call the tool again if you need it]", elidedPrefix, what, verb, lines, unit)
}

// describeCall renders a call compactly and deterministically: the name,
// then a path-like argument bare, then the other arguments as key=value in
// key order, cut at 120 bytes.
func describeCall(c llm.ToolCall) string {
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || len(args) == 0 {
		return c.Name
	}
	parts := []string{c.Name}
	value := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if s == "" || strings.ContainsAny(s, " \t\n\"") {
				return strconv.Quote(s)
			}
			return s
		}
		return string(raw)
	}
	for _, k := range []string{"path", "pattern", "query", "glob"} {
		if raw, ok := args[k]; ok {
			parts = append(parts, value(raw))
			delete(args, k)
			break
		}
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+value(args[k]))
	}
	return truncate(strings.Join(parts, " "), 120)
}

// firstLine returns s's first non-empty line, cut at max bytes.
func firstLine(s string, max int) string {
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return truncate(l, max)
		}
	}
	return ""
}

func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Compactor returns the hook agent.Config.Compact takes: it compacts a
// request's messages (system prompt first) with Compact when the calibrated
// estimate, tools included, is over budget. A budget of 0 or less turns it
// off.
func (c *Calibrator) Compactor(model string, budget int) func([]llm.Message, []llm.ToolSpec) ([]llm.Message, bool) {
	return func(msgs []llm.Message, tools []llm.ToolSpec) ([]llm.Message, bool) {
		if budget <= 0 {
			return msgs, false
		}
		return Compact(msgs, budget, c.Estimator(model, tools))
	}
}

// contextWindows are the context sizes, in tokens, of models people point
// askrepo at, by name prefix (longest prefix wins).
var contextWindows = map[string]int{
	"gpt-4.1":       1_047_576,
	"gpt-4o":        128_000,
	"gpt-5":         400_000,
	"o3":            200_000,
	"o4-mini":       200_000,
	"deepseek-chat": 128_000,
	"deepseek-r":    128_000,
	"claude":        200_000,
	"qwen":          32_768,
	"llama3":        128_000,
	"mistral":       32_000,
}

// Budget bounds for DefaultBudget: a share of the window leaves room for the
// answer and the turn's own growth; the cap keeps a request's cost sane on
// models with huge windows, where a long prompt is slow and expensive even if
// it fits; unknown models get what fits a 100k window.
const (
	budgetShare   = 0.6
	budgetCap     = 120_000
	budgetUnknown = 60_000
)

// DefaultBudget is the context budget, in prompt tokens, for a model: 60% of
// its known context window, at most 120k; 60k for a model it does not know.
func DefaultBudget(model string) int {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:] // "deepseek/deepseek-chat", "openai/gpt-4o"
	}
	best, window := "", 0
	for prefix, w := range contextWindows {
		if strings.HasPrefix(name, prefix) && len(prefix) > len(best) {
			best, window = prefix, w
		}
	}
	if window == 0 {
		return budgetUnknown
	}
	return min(int(float64(window)*budgetShare), budgetCap)
}
