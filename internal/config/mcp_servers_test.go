package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMCPServersLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeFile(t, path, `mcp_servers:
  - name: tickets
    url: https://tickets.example.com/mcp
    headers: {Authorization: TICKETS_AUTH}
    tools: [create_ticket]
    channels: [C0123PAY, dm]
  - name: docs
    command: docs-mcp
    args: [--read-only]
    env: {DOCS_TOKEN: ASKREPO_DOCS_TOKEN}
    channels: ["*"]
`)
	c, err := Load(mapEnv(map[string]string{"BOT_CONFIG": path, "TICKETS_AUTH": "Bearer t0ps3cret", "ASKREPO_DOCS_TOKEN": "d0cs"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []MCPServer{
		{Name: "tickets", URL: "https://tickets.example.com/mcp", Headers: map[string]string{"Authorization": "TICKETS_AUTH"},
			Tools: []string{"create_ticket"}, Channels: []string{"C0123PAY", "dm"}, Line: 2},
		{Name: "docs", Command: "docs-mcp", Args: []string{"--read-only"}, Env: map[string]string{"DOCS_TOKEN": "ASKREPO_DOCS_TOKEN"},
			Channels: []string{"*"}, Line: 7},
	}
	if d := cmp.Diff(want, c.MCPServers); d != "" {
		t.Errorf("MCPServers (-want +got):\n%s", d)
	}
}

// TestMCPServersInvalid reports every mistake at once, each with its
// line, and never a credential's value.
func TestMCPServersInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeFile(t, path, `mcp_servers:
  - name: Tickets__x
    url: https://user:hunter2@tickets.example.com/mcp
    headers: {Authorization: "Bearer abc"}
    channels: [general]
  - name: both
    command: x
    url: https://a.example/mcp
    channels: ["*"]
  - name: neither
    channels: ["*"]
    colour: blue
  - name: both
    command: y
    headers: {X-Key: KEY}
    tools: ["a b", ok, ok]
  - name: nokey
    url: http://localhost:9/mcp
    headers: {X-Key: NOT_SET_ANYWHERE}
    channels: [dm]
`)
	_, err := Load(mapEnv(map[string]string{"BOT_CONFIG": path}), nil)
	if err == nil {
		t.Fatal("Load accepted a broken mcp_servers")
	}
	msg := err.Error()
	for _, want := range []string{
		`line 2: mcp_servers[0] (Tickets__x): name "Tickets__x"`,
		`url "https://tickets.example.com/mcp": holds a user or password`,
		`headers: Authorization: want the name of the environment variable`,
		`channels: "general" is not a channel ID`,
		`line 6: mcp_servers[1] (both): command and url are both set`,
		`line 10: mcp_servers[2] (neither): want command`,
		`line 12: mcp_servers[2]: unknown key "colour"`,
		`line 13: mcp_servers[3] (both): name "both" is taken by the entry on line 6`,
		`mcp_servers[3] (both): headers are for a url`,
		`tools: "a b" is not a tool name`,
		`tools: "ok" is listed twice`,
		`mcp_servers[3] (both): channels: want where its tools are offered`,
		`line 17: mcp_servers (nokey): headers: X-Key: the environment variable NOT_SET_ANYWHERE is not set`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	for _, secret := range []string{"hunter2", "Bearer abc"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error shows %q:\n%s", secret, msg)
		}
	}
}

func TestMCPServerOffersIn(t *testing.T) {
	tests := []struct {
		channels []string
		where    string
		want     bool
	}{
		{[]string{"*"}, "", true},
		{[]string{"*"}, "C1", true},
		{[]string{"dm"}, "D0123", true},
		{[]string{"dm"}, "C0123", false},
		{[]string{"dm"}, "", false},
		{[]string{"C0123"}, "C0123", true},
		{[]string{"C0123"}, "C0456", false},
		{[]string{"C0123"}, "", false},
	}
	for _, tt := range tests {
		if got := (MCPServer{Channels: tt.channels}).OffersIn(tt.where); got != tt.want {
			t.Errorf("channels %v, asked in %q: offered = %v, want %v", tt.channels, tt.where, got, tt.want)
		}
	}
}

// The README's example of mcp_servers is valid as written.
func TestMCPServersReadmeExample(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(data), "## Tools of other MCP servers")
	_, block, _ := strings.Cut(section, "```yaml\n")
	block, _, _ = strings.Cut(block, "```")
	servers, errs := parseMCPServers([]byte(block))
	if len(errs) > 0 || len(servers) != 2 {
		t.Fatalf("README example: %d servers, problems %v\n%s", len(servers), errs, block)
	}
}

// The example entries of configs/askrepo.example.yaml, commented out
// there, are valid once uncommented.
func TestMCPServersExampleConfig(t *testing.T) {
	block := exampleBlock(t, "mcp_servers")
	servers, errs := parseMCPServers([]byte(block))
	if len(errs) > 0 || len(servers) != 2 {
		t.Fatalf("example config: %d servers, problems %v\n%s", len(servers), errs, block)
	}
}
