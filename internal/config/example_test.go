package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampleLine is a setting as configs/.env.example shows it, commented
// out or not: "# NAME=value" or "NAME=value".
var exampleLine = regexp.MustCompile(`^(?:# )?([A-Z][A-Z0-9_]*)=(.*)$`)

// TestEnvExampleLoads: every setting is shown in configs/.env.example as a
// line one can uncomment, and the file with every such line uncommented
// reads as a .env and loads, so what it suggests is a value that works.
func TestEnvExampleLoads(t *testing.T) {
	data, err := os.ReadFile("../../configs/.env.example")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	var uncommented strings.Builder
	for line := range strings.Lines(string(data)) {
		m := exampleLine.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
		if m == nil {
			continue
		}
		shown[m[1]] = true
		// BOT_CONFIG names a file of the reader's own; the tokens are
		// left empty, so Slack stays off.
		if m[1] == "BOT_CONFIG" {
			continue
		}
		uncommented.WriteString(m[1] + "=" + m[2] + "\n")
	}
	for _, s := range Settings {
		if !shown[s.Env] {
			t.Errorf("configs/.env.example has no %s=… line", s.Env)
		}
	}
	path := filepath.Join(t.TempDir(), ".env")
	writeFile(t, path, uncommented.String())
	dot, err := DotEnv(path)
	if err != nil {
		t.Fatalf("the example, uncommented, does not read as a .env: %v", err)
	}
	c, err := Load(Over(mapEnv(nil), dot), nil)
	if err != nil {
		t.Fatalf("the example, uncommented, does not load: %v\n%s", err, uncommented.String())
	}
	if c.SlackUI.Mode != "auto" || len(c.MCP.Tokens) != 1 || c.Tracing.Endpoint == "" {
		t.Errorf("example settings not read: ui %q, %d MCP tokens, tracing endpoint %q", c.SlackUI.Mode, len(c.MCP.Tokens), c.Tracing.Endpoint)
	}
}

// exampleBlock is the section key of configs/askrepo.example.yaml, which
// the file shows commented out ("# key:" and its indented lines),
// uncommented.
func exampleBlock(t *testing.T, key string) string {
	t.Helper()
	data, err := os.ReadFile("../../configs/askrepo.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var block strings.Builder
	in := false
	for line := range strings.Lines(string(data)) {
		switch {
		case strings.HasPrefix(line, "# "+key+":"):
			in = true
		case in && !strings.HasPrefix(line, "#   "):
			in = false
		}
		if in {
			block.WriteString(strings.TrimPrefix(line, "# "))
		}
	}
	return block.String()
}
