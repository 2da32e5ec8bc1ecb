package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	tokA = "aaaaaaaaaaaaaaaaaaaaaaaa"
	tokB = "bbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestMCPTokens(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		yaml    string
		want    []MCPToken
		wantErr []string // each must appear in the error
	}{
		{name: "none: /mcp off"},
		{name: "from the environment, every repository",
			env:  map[string]string{"BOT_MCP_TOKENS": "ci=" + tokA + ", laptop=" + tokB},
			want: []MCPToken{{Name: "ci", Token: tokA, Env: "BOT_MCP_TOKENS"}, {Name: "laptop", Token: tokB, Env: "BOT_MCP_TOKENS"}}},
		{name: "from BOT_CONFIG, limited to its repos",
			env:  map[string]string{"ASKREPO_MCP_CI": tokA},
			yaml: "mcp_tokens:\n  - name: ci\n    token_env: ASKREPO_MCP_CI\n    repos: [payments, infra]\n",
			want: []MCPToken{{Name: "ci", Token: tokA, Repos: []string{"payments", "infra"}, Env: "ASKREPO_MCP_CI"}}},
		{name: "a variable that is not set",
			yaml:    "mcp_tokens:\n  - name: ci\n    token_env: ASKREPO_MCP_CI\n    repos: [payments]\n",
			wantErr: []string{"line 2", "ASKREPO_MCP_CI is not set"}},
		{name: "no repos",
			env:     map[string]string{"ASKREPO_MCP_CI": tokA},
			yaml:    "mcp_tokens:\n  - name: ci\n    token_env: ASKREPO_MCP_CI\n",
			wantErr: []string{"repos must list"}},
		{name: "a typo in a key",
			env:     map[string]string{"ASKREPO_MCP_CI": tokA},
			yaml:    "mcp_tokens:\n  - name: ci\n    token_env: ASKREPO_MCP_CI\n    repo: [payments]\n",
			wantErr: []string{`unknown key "repo"`}},
		{name: "too short, said without the value",
			env:     map[string]string{"BOT_MCP_TOKENS": "ci=hunter2"},
			wantErr: []string{`"ci"`, "at least 16"}},
		{name: "one name twice",
			env:     map[string]string{"BOT_MCP_TOKENS": "ci=" + tokA, "X": tokB},
			yaml:    "mcp_tokens:\n  - name: ci\n    token_env: X\n    repos: [a]\n",
			wantErr: []string{`"ci" is named twice`}},
		{name: "one value twice",
			env:     map[string]string{"BOT_MCP_TOKENS": "ci=" + tokA + ",other=" + tokA},
			wantErr: []string{"the same value"}},
		{name: "not name=token",
			env:     map[string]string{"BOT_MCP_TOKENS": tokA},
			wantErr: []string{"want name=token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range tt.env {
				env[k] = v
			}
			if tt.yaml != "" {
				path := filepath.Join(t.TempDir(), "askrepo.yaml")
				writeFile(t, path, tt.yaml)
				env["BOT_CONFIG"] = path
			}
			c, err := Load(mapEnv(env), nil)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, c.MCP.Tokens); diff != "" {
					t.Errorf("tokens (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want one saying %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, v := range []string{tokA, tokB, "hunter2"} {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error quotes a token: %q", err)
				}
			}
		})
	}
}

func TestMCPTokensNeverPrint(t *testing.T) {
	c, err := Load(mapEnv(map[string]string{"BOT_MCP_TOKENS": "ci=" + tokA}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v", c, c, c.MCP); strings.Contains(s, tokA) {
		t.Errorf("the config prints a token: %s", s)
	}
	if c.MCP.Rate != 60 {
		t.Errorf("BOT_MCP_RATE default = %d, want 60", c.MCP.Rate)
	}
}

// The mcp_tokens entry of configs/askrepo.example.yaml, commented out
// there, loads once uncommented and its variable set.
func TestMCPTokensExampleConfig(t *testing.T) {
	block := exampleBlock(t, "mcp_tokens")
	path := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeFile(t, path, block)
	c, err := Load(mapEnv(map[string]string{"BOT_CONFIG": path, "ASKREPO_MCP_CI": tokA}), nil)
	if err != nil {
		t.Fatalf("the example's mcp_tokens: %v\n%s", err, block)
	}
	want := []MCPToken{{Name: "ci", Token: tokA, Repos: []string{"payments"}, Env: "ASKREPO_MCP_CI"}}
	if diff := cmp.Diff(want, c.MCP.Tokens); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
}
