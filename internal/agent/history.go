package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/askrepo/askrepo/internal/llm"
)

// withIDs gives every call an ID unique within the step: a tool result is
// matched to its call by ID, and a few servers (Ollama among them) send none.
// The slice is copied before any change, since it belongs to the response.
func withIDs(calls []llm.ToolCall, step int) []llm.ToolCall {
	seen := make(map[string]bool, len(calls))
	copied := false
	for i, c := range calls {
		if c.ID != "" && !seen[c.ID] {
			seen[c.ID] = true
			continue
		}
		if !copied {
			calls = slices.Clone(calls)
			copied = true
		}
		calls[i].ID = fmt.Sprintf("call_%d_%d", step, i)
		seen[calls[i].ID] = true
	}
	return calls
}

// unanswered returns the calls of the history's last assistant message that
// have no result, if nothing but tool results follows that message.
func unanswered(h []llm.Message) []llm.ToolCall {
	i := len(h) - 1
	for i >= 0 && h[i].Role == llm.RoleTool {
		i--
	}
	if i < 0 || h[i].Role != llm.RoleAssistant || len(h[i].ToolCalls) == 0 {
		return nil
	}
	answered := make(map[string]bool, len(h)-i-1)
	for _, m := range h[i+1:] {
		answered[m.ToolCallID] = true
	}
	var missing []llm.ToolCall
	for _, c := range h[i].ToolCalls {
		if !answered[c.ID] {
			missing = append(missing, c)
		}
	}
	return missing
}

// QuestionIndex is the index of the last user message that is a person's
// question rather than a note of the loop, or -1: where the turn Resume
// would continue starts.
func QuestionIndex(h []llm.Message) int { return questionIndex(h) }

// questionIndex is the index of the last user message that is a person's
// question rather than a note of the loop, or -1.
func questionIndex(h []llm.Message) int {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == llm.RoleUser && !strings.HasPrefix(h[i].Content, noteTag) {
			return i
		}
	}
	return -1
}
