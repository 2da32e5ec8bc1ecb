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
	// Exactly what the bot uses: a scope or event more is one more thing
	// an admin must approve for nothing, one less breaks an entry point.
	scopes := []string{"app_mentions:read", "assistant:write", "channels:history", "chat:write", "commands", "groups:history", "im:history", "reactions:write"}
	if got := slices.Sorted(slices.Values(m.OAuth.Scopes.Bot)); !slices.Equal(got, scopes) {
		t.Errorf("bot scopes %v, want %v", got, scopes)
	}
	events := []string{"agent_session_stopped", "app_home_opened", "app_mention", "assistant_thread_context_changed", "assistant_thread_started", "message.channels", "message.groups", "message.im"}
	if got := slices.Sorted(slices.Values(m.Settings.Events.Bot)); !slices.Equal(got, events) {
		t.Errorf("bot events %v, want %v", got, events)
	}
}
