package budget

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/askrepo/askrepo/internal/llm"
)

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

// cloneMessages copies msgs deeply enough that Compact's edits (contents
// replaced, messages dropped) never reach the caller's slice.
func cloneMessages(ms []llm.Message) []llm.Message {
	if ms == nil {
		return nil
	}
	out := make([]llm.Message, len(ms))
	for i, m := range ms {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		out[i] = m
	}
	return out
}
