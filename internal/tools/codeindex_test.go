package tools

import (
	"encoding/json"
	"testing"
)

// TestUsesIndex: a call uses the code index when its tool can narrow or
// answer through it; bot tool loads none for the others.
func TestUsesIndex(t *testing.T) {
	reg := NewRegistry(Default(nil, Options{})...)
	for _, tc := range []struct {
		tool, args string
		want       bool
	}{
		{SearchCodeName, `{"pattern":"retryPolicy"}`, true},
		{SearchCodeName, `{"pattern":"\\w+Error\\("}`, true},
		{SearchCodeName, `{"pattern":"retry","ignore_case":true}`, true},
		{SearchCodeName, `{"pattern":"[A-Z]\\w*"}`, false},
		{SearchCodeName, `{"pattern":"(("}`, false},
		{SearchCodeName, `not json`, false},
		{FindSymbolName, `{"name":"Client.Do"}`, true},
		{FindReferencesName, `{"name":"Do"}`, true},
		{RepoMapName, `{}`, true},
		{ReadFileName, `{"path":"a.go"}`, false},
		{GitLogName, `{}`, false},
		{"no_such_tool", `{}`, false},
	} {
		if got := reg.UsesIndex(Call{Name: tc.tool, Input: json.RawMessage(tc.args)}); got != tc.want {
			t.Errorf("UsesIndex(%s %s) = %v, want %v", tc.tool, tc.args, got, tc.want)
		}
	}
}
