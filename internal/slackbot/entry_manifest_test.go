package slackbot

import (
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The app manifest people install declares every way in the bot serves,
// with the IDs the code matches, and the scopes and events they need.
func TestManifestDeclaresTheEntryPoints(t *testing.T) {
	raw, err := os.ReadFile("../../configs/slack-app-manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features struct {
			AppHome struct {
				HomeTab bool `yaml:"home_tab_enabled"`
			} `yaml:"app_home"`
			AssistantView map[string]any `yaml:"assistant_view"`
			Commands      []struct {
				Command string `yaml:"command"`
				Escape  bool   `yaml:"should_escape"`
			} `yaml:"slash_commands"`
			Shortcuts []struct {
				Type       string `yaml:"type"`
				CallbackID string `yaml:"callback_id"`
			} `yaml:"shortcuts"`
		} `yaml:"features"`
		OAuth struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
		Settings struct {
			Events struct {
				Bot []string `yaml:"bot_events"`
			} `yaml:"event_subscriptions"`
			Interactivity struct {
				Enabled bool `yaml:"is_enabled"`
			} `yaml:"interactivity"`
		} `yaml:"settings"`
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	f := m.Features
	if !f.AppHome.HomeTab || f.AssistantView == nil || !m.Settings.Interactivity.Enabled {
		t.Errorf("manifest: home tab %v, assistant view %v, interactivity %v; want all", f.AppHome.HomeTab, f.AssistantView != nil, m.Settings.Interactivity.Enabled)
	}
	if len(f.Commands) != 1 || f.Commands[0].Command != "/askrepo" || f.Commands[0].Escape {
		t.Errorf("slash commands %+v: want /askrepo, unescaped", f.Commands)
	}
	if len(f.Shortcuts) != 1 || f.Shortcuts[0].Type != "message" || f.Shortcuts[0].CallbackID != shortcutCallback {
		t.Errorf("shortcuts %+v: want one message shortcut %q", f.Shortcuts, shortcutCallback)
	}
	for _, s := range []string{"assistant:write", "commands", "chat:write", "im:history"} {
		if !slices.Contains(m.OAuth.Scopes.Bot, s) {
			t.Errorf("scopes %v lack %s", m.OAuth.Scopes.Bot, s)
		}
	}
	for _, e := range []string{"assistant_thread_started", "assistant_thread_context_changed", "app_home_opened", "message.im"} {
		if !slices.Contains(m.Settings.Events.Bot, e) {
			t.Errorf("events %v lack %s", m.Settings.Events.Bot, e)
		}
	}
}
