package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDefaults(t *testing.T) {
	c, err := Load(mapEnv(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.RepoPath != "." || c.DataDir != "./data" || c.HTTPAddr != ":8080" || c.MaxSteps != 25 || c.Followups != "all" || !c.OpenAIStream {
		t.Errorf("defaults = %+v", c)
	}
	if c.OpenAIAPIKey.Set() || c.SlackEnabled() {
		t.Errorf("no credentials expected by default")
	}
	if got := c.SlackMissing(); strings.Join(got, ",") != "SLACK_BOT_TOKEN,SLACK_APP_TOKEN" {
		t.Errorf("SlackMissing = %v", got)
	}
}

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	yamlPath := filepath.Join(dir, "askrepo.yaml")
	writeFile(t, yamlPath, "openai:\n  model: from-yaml\n  base_url: http://yaml.example/v1\nslack:\n  allow_channels: [C1, C2]\nagent:\n  max_steps: 7\nrepo:\n  path: /yaml/repo\n")
	dotenv := filepath.Join(dir, ".env")
	writeFile(t, dotenv, "OPENAI_MODEL=from-dotenv\nREPO_PATH=/dotenv/repo\nBOT_MAX_STEPS=9\n")
	t.Setenv("REPO_PATH", "/env/repo")
	t.Setenv("BOT_CONFIG", yamlPath)
	dot, err := DotEnv(dotenv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(Over(os.LookupEnv, dot), map[string]string{"BOT_MAX_STEPS": "11"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, got, want string
	}{
		{"yaml only", c.OpenAIBaseURL, "http://yaml.example/v1"},
		{".env over yaml", c.OpenAIModel, "from-dotenv"},
		{"environment over .env", c.RepoPath, "/env/repo"},
		{"flag over all", fmt.Sprint(c.MaxSteps), "11"},
		{"yaml list", strings.Join(c.AllowChannel, "+"), "C1+C2"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if _, ok := os.LookupEnv("OPENAI_MODEL"); ok {
		t.Error(".env must not be written into the process environment")
	}
}

// Whether a missing .env matters is the caller's to say: one asked for by
// name must exist, the one in the working directory need not.
func TestMissingDotenv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.env")
	if _, err := DotEnv(path); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want one naming %s and wrapping fs.ErrNotExist", err, path)
	}
}

// Every problem of the YAML file comes at once, in the file's order, each
// with its line.
func TestYAMLProblemsNameTheirLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, p, "log:\n  level: loud\nagent:\n  max_steps: 0\nbogus: 1\nslack:\n  allow_channels:\n    - C1\n  folowups: all\nrepos:\n  - name: a\n    path: /x\n")
	_, err := Load(mapEnv(map[string]string{"BOT_CONFIG": p, "OPENAI_STREAM": "maybe"}), nil)
	if err == nil {
		t.Fatal("want an error")
	}
	want := []string{
		p + `: line 2: log.level: want one of debug, info, warn, error, got "loud"`,
		p + `: line 4: agent.max_steps: want a whole number from 1 to 200, got "0"`,
		p + `: line 5: unknown setting "bogus"`,
		p + `: line 9: unknown setting "slack.folowups"`,
		`OPENAI_STREAM: want true or false, got "maybe"`,
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

func TestAllProblemsAtOnce(t *testing.T) {
	_, err := Load(mapEnv(map[string]string{
		"BOT_MAX_STEPS":    "zero",
		"BOT_TOOL_TIMEOUT": "-1s",
		"BOT_FOLLOWUPS":    "sometimes",
		"BOT_LEASE_TTL":    "500ms",
		"OPENAI_BASE_URL":  "localhost:11434",
		"SLACK_APP_TOKEN":  "xoxb-123-secret-value",
		"SLACK_BOT_TOKEN":  "xapp-1-other-secret",
	}), nil)
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for _, want := range []string{"BOT_MAX_STEPS", "BOT_TOOL_TIMEOUT", "BOT_FOLLOWUPS", "BOT_LEASE_TTL: want a duration of 1s or more", "OPENAI_BASE_URL", "SLACK_APP_TOKEN: want an app-level token", "SLACK_BOT_TOKEN: want a bot token"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	for _, secret := range []string{"secret-value", "other-secret"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error leaks a token: %s", msg)
		}
	}
}

func TestUnknownYAMLKey(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	writeFile(t, p, "slack:\n  folowups: all\n")
	_, err := Load(mapEnv(map[string]string{"BOT_CONFIG": p}), nil)
	if err == nil || !strings.Contains(err.Error(), `unknown setting "slack.folowups"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestSecretsNeverPrint(t *testing.T) {
	const token = "xoxb-very-secret-token"
	c, err := Load(mapEnv(map[string]string{"SLACK_BOT_TOKEN": token, "OPENAI_API_KEY": "sk-also-secret"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "config", c, "token", c.SlackBotToken)
	js, _ := json.Marshal(c)
	outputs := map[string]string{
		"%v":   fmt.Sprintf("%v", c),
		"%+v":  fmt.Sprintf("%+v", c),
		"%#v":  fmt.Sprintf("%#v", c),
		"%s":   fmt.Sprintf("%s", c.SlackBotToken),
		"slog": logs.String(),
		"json": string(js),
	}
	for name, out := range outputs {
		if strings.Contains(out, "very-secret") || strings.Contains(out, "also-secret") {
			t.Errorf("%s leaks a secret: %s", name, out)
		}
	}
	if c.SlackBotToken.Reveal() != token {
		t.Error("Reveal must return the token")
	}
}

func TestTemperatureZeroIsKept(t *testing.T) {
	c, err := Load(mapEnv(map[string]string{"OPENAI_TEMPERATURE": "0"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.OpenAITemperature == nil || *c.OpenAITemperature != 0 {
		t.Fatalf("temperature = %v", c.OpenAITemperature)
	}
	if c.OpenAITimeout != 120*time.Second {
		t.Errorf("timeout = %v", c.OpenAITimeout)
	}
}

// TestDocumented keeps README.md and configs/.env.example in step with the
// settings table: a new setting that is not documented fails here.
func TestDocumented(t *testing.T) {
	for _, file := range []string{"../../README.md", "../../configs/.env.example"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range Settings {
			if !bytes.Contains(data, []byte(s.Env)) {
				t.Errorf("%s does not mention %s", file, s.Env)
			}
		}
	}
	data, err := os.ReadFile("../../configs/askrepo.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Settings {
		if s.YAML == "" {
			continue
		}
		key := s.YAML[strings.LastIndex(s.YAML, ".")+1:]
		if !bytes.Contains(data, []byte(key+":")) {
			t.Errorf("askrepo.example.yaml does not show %s", s.YAML)
		}
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAppTokenShapeSaysWhereToMakeOne(t *testing.T) {
	for _, tok := range []string{"garbage", "xoxb-1-secret"} {
		_, err := Load(mapEnv(map[string]string{"SLACK_APP_TOKEN": tok, "SLACK_BOT_TOKEN": "xoxb-1-x"}), nil)
		if err == nil {
			t.Fatalf("%s: want an error", tok)
		}
		msg := err.Error()
		for _, want := range []string{"xapp-", "App-Level Tokens", "connections:write"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error lacks %q: %s", tok, want, msg)
			}
		}
		if isBot := strings.Contains(msg, "bot token"); isBot != strings.HasPrefix(tok, "xoxb-") {
			t.Errorf("%s: error calls it a bot token = %v: %s", tok, isBot, msg)
		}
	}
}

// A URL setting that is not an http(s) URL is quoted back without what can
// hold a token: a user name (https://TOKEN@host), a password, a query.
func TestBadURLIsQuotedWithoutCredentials(t *testing.T) {
	for _, v := range []string{
		"ftp://tok-user-1234@host/v1",
		"ftp://user:tok-pass-1234@host/v1",
		"ftp://host/v1?api-key=tok-query-1234",
		"http://tok-user-1234@[::1/v1",
	} {
		_, err := Load(mapEnv(map[string]string{"OPENAI_BASE_URL": v}), nil)
		if err == nil {
			t.Fatalf("%s: want an error", v)
		}
		if msg := err.Error(); strings.Contains(msg, "tok-") || !strings.Contains(msg, "OPENAI_BASE_URL") {
			t.Errorf("%s: error = %s", v, msg)
		}
	}
}

// TestIndexSetting: BOT_INDEX is on by default and takes on or off, from
// the environment or the YAML file (where a bare on/off stays a word).
func TestIndexSetting(t *testing.T) {
	dir := t.TempDir()
	off := filepath.Join(dir, "off.yaml")
	writeFile(t, off, "repo:\n  index: off\n")
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    bool
		wantErr bool
	}{
		{"default", nil, true, false},
		{"env off", map[string]string{"BOT_INDEX": "off"}, false, false},
		{"env on", map[string]string{"BOT_INDEX": "on"}, true, false},
		{"yaml off", map[string]string{"BOT_CONFIG": off}, false, false},
		{"not a word it knows", map[string]string{"BOT_INDEX": "yes"}, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(mapEnv(tt.env), nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Load: %v, want error %v", err, tt.wantErr)
			}
			if err == nil && c.Index != tt.want {
				t.Errorf("Index = %v, want %v", c.Index, tt.want)
			}
		})
	}
}
