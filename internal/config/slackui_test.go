package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestSlackUI(t *testing.T) {
	yamlFile := filepath.Join(t.TempDir(), "askrepo.yaml")
	writeFile(t, yamlFile, "slack:\n  ui: messages\n  tasks: plan\n")
	tests := []struct {
		name        string
		env         map[string]string
		mode, tasks string
		wantErr     string
	}{
		{name: "defaults", mode: "auto", tasks: "timeline"},
		{name: "from the environment", env: map[string]string{"BOT_SLACK_UI": "stream", "BOT_SLACK_TASKS": "plan"}, mode: "stream", tasks: "plan"},
		{name: "from BOT_CONFIG", env: map[string]string{"BOT_CONFIG": yamlFile}, mode: "messages", tasks: "plan"},
		{name: "the environment wins", env: map[string]string{"BOT_CONFIG": yamlFile, "BOT_SLACK_UI": "auto"}, mode: "auto", tasks: "plan"},
		{name: "an unknown UI", env: map[string]string{"BOT_SLACK_UI": "fancy"}, wantErr: "BOT_SLACK_UI"},
		{name: "an unknown task display", env: map[string]string{"BOT_SLACK_TASKS": "kanban"}, wantErr: "BOT_SLACK_TASKS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(mapEnv(tt.env), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.SlackUI.Mode != tt.mode || c.SlackUI.Tasks != tt.tasks {
				t.Errorf("ui %q tasks %q, want %q %q", c.SlackUI.Mode, c.SlackUI.Tasks, tt.mode, tt.tasks)
			}
		})
	}
}
