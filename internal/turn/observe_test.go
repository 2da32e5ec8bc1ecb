package turn

import (
	"testing"

	"github.com/askrepo/askrepo/internal/llm"
)

func TestWithoutCutResults(t *testing.T) {
	step := []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "read_file"}, {ID: "b", Name: "list_files"}}},
		{Role: llm.RoleTool, ToolCallID: "a", Content: "done"},
		{Role: llm.RoleTool, ToolCallID: "b", Content: "cancelled: the turn was stopped before this call finished"},
	}
	got := withoutCutResults(step)
	if len(got) != 1 || len(got[0].ToolCalls) != 2 || len(step) != 3 {
		t.Errorf("withoutCutResults = %+v (input now %d long); want the calls alone, input untouched", got, len(step))
	}
	answer := []llm.Message{{Role: llm.RoleAssistant, Content: "a"}}
	if got := withoutCutResults(answer); len(got) != 1 {
		t.Errorf("an answer step lost messages: %+v", got)
	}
}
