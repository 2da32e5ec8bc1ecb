// Package config loads askrepo's settings: built-in defaults, then an optional
// YAML file (BOT_CONFIG), then a .env file, then the environment, then
// command-line flags, each layer overriding the one before. Loading is pure
// (the environment comes in as a lookup function) so tests pass a map, and
// every problem is reported at once.
//
// It must not import other internal packages.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is every setting of the bot. Field comments name the environment
// variable; the YAML key is in the settings table below.
type Config struct {
	OpenAIAPIKey      Secret        // OPENAI_API_KEY; unset = the demo model
	OpenAIBaseURL     string        // OPENAI_BASE_URL
	OpenAIModel       string        // OPENAI_MODEL
	OpenAIStream      bool          // OPENAI_STREAM
	OpenAITemperature *float32      // OPENAI_TEMPERATURE; unset = the server's default
	OpenAITimeout     time.Duration // OPENAI_TIMEOUT, one request

	RepoPath   string        // REPO_PATH
	RepoName   string        // REPO_NAME; default: the directory's name
	RepoDeny   []string      // REPO_DENY, extra deny patterns
	RepoSync   time.Duration // BOT_REPO_SYNC, between fetches of url repos
	KnownHosts string        // BOT_SSH_KNOWN_HOSTS, the ssh remotes' pinned host keys
	Index      bool          // BOT_INDEX: a code index per repository and commit

	SlackBotToken Secret // SLACK_BOT_TOKEN (xoxb-)
	SlackAppToken Secret // SLACK_APP_TOKEN (xapp-)
	SlackAPIURL   string // SLACK_API_URL

	DataDir      string        // BOT_DATA_DIR
	Store        Secret        // BOT_STORE: sqlite | memory | postgres://… (holds a password)
	LeaseTTL     time.Duration // BOT_LEASE_TTL: how long a dead replica keeps its threads
	HTTPAddr     string        // BOT_HTTP_ADDR
	ConfigFile   string        // BOT_CONFIG
	LogLevel     string        // BOT_LOG_LEVEL
	LogFormat    string        // BOT_LOG_FORMAT
	MaxSteps     int           // BOT_MAX_STEPS
	ToolTimeout  time.Duration // BOT_TOOL_TIMEOUT
	TurnTimeout  time.Duration // BOT_TURN_TIMEOUT
	DrainTimeout time.Duration // BOT_DRAIN_TIMEOUT
	Retention    time.Duration // BOT_RETENTION
	Recovery     string        // BOT_RECOVERY: resume | rerun | report
	Budget       int           // BOT_CONTEXT_BUDGET; 0 = by model
	Concurrency  int           // BOT_MAX_CONCURRENT
	Followups    string        // BOT_FOLLOWUPS: all | mention
	AllowChannel []string      // BOT_ALLOW_CHANNELS
	AllowUsers   []string      // BOT_ALLOW_USERS

	Tracing    Tracing     // OTEL_EXPORTER_OTLP_*, BOT_TRACE_CONTENT (see tracing.go)
	Budgets    Budgets     // the budgets section of BOT_CONFIG (no environment variable)
	MCPServers []MCPServer // BOT_CONFIG's mcp_servers: tools of other MCP servers for the agent
	MCP        MCP         // BOT_MCP_TOKENS, BOT_MCP_RATE, mcp_tokens of BOT_CONFIG
	SlackUI    SlackUI     // BOT_SLACK_UI, BOT_SLACK_TASKS
}

// Setting describes one variable: its name in the environment and in the
// YAML file, its default, and what it does. README and configs/.env.example
// list the same table; a test keeps them in step.
type Setting struct {
	Env     string
	YAML    string
	Default string
	Doc     string
	set     func(c *Config, v string) error
}

// Settings is the full table, in the order the documentation shows it.
var Settings = []Setting{
	{"OPENAI_API_KEY", "", "", "API key of the OpenAI-compatible server. Unset: the built-in demo model answers (no network).", func(c *Config, v string) error { c.OpenAIAPIKey = Secret(v); return nil }},
	{"OPENAI_BASE_URL", "openai.base_url", "https://api.openai.com/v1", "Base URL of any OpenAI-compatible chat completions API (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp).", setURL(func(c *Config) *string { return &c.OpenAIBaseURL })},
	{"OPENAI_MODEL", "openai.model", "gpt-4.1-mini", "Model name sent with every request.", setString(func(c *Config) *string { return &c.OpenAIModel })},
	{"OPENAI_STREAM", "openai.stream", "true", "Stream responses (true/false). Some proxies only work without streaming.", setBool(func(c *Config) *bool { return &c.OpenAIStream })},
	{"OPENAI_TEMPERATURE", "openai.temperature", "", "Sampling temperature; unset leaves the server's default. 0 is sent as 0.", func(c *Config, v string) error {
		if v == "" {
			c.OpenAITemperature = nil
			return nil
		}
		f, err := strconv.ParseFloat(v, 32)
		if err != nil || f < 0 || f > 2 {
			return fmt.Errorf("want a number from 0 to 2, got %q", v)
		}
		t := float32(f)
		c.OpenAITemperature = &t
		return nil
	}},
	{"OPENAI_TIMEOUT", "openai.timeout", "120s", "Time limit for one model request (Go duration).", setDuration(func(c *Config) *time.Duration { return &c.OpenAITimeout })},
	{"REPO_PATH", "repo.path", ".", "Checkout the bot answers about. Tools cannot read outside it.", setString(func(c *Config) *string { return &c.RepoPath })},
	{"REPO_NAME", "repo.name", "", "Name shown in answers; default: the checkout directory's name.", setString(func(c *Config) *string { return &c.RepoName })},
	{"REPO_DENY", "repo.deny", "", "Extra deny patterns (comma-separated, gitignore-like) added to the built-in secret-file list.", setList(func(c *Config) *[]string { return &c.RepoDeny })},
	{"BOT_REPO_SYNC", "repo.sync", "5m", "Time between fetches of the git url repositories of BOT_CONFIG; a checkout moves only between turns.", setDuration(func(c *Config) *time.Duration { return &c.RepoSync })},
	{"BOT_SSH_KNOWN_HOSTS", "repo.ssh_known_hosts", "", "A known_hosts file with the host keys of the ssh remotes of BOT_CONFIG; only those keys are accepted. Empty: a host's first key is trusted and kept in BOT_DATA_DIR/known_hosts.", setString(func(c *Config) *string { return &c.KnownHosts })},
	{"BOT_INDEX", "repo.index", "on", "on: every repository gets a code index per commit, built in the background and kept in BOT_DATA_DIR/index, for the symbol tools and a faster search_code; off: the tools scan the checkout.", func(c *Config, v string) error {
		switch v {
		case "on":
			c.Index = true
		case "off":
			c.Index = false
		default:
			return fmt.Errorf("want on or off, got %q", v)
		}
		return nil
	}},
	{"SLACK_BOT_TOKEN", "", "", "Bot token (xoxb-…). With SLACK_APP_TOKEN, `bot` serves Slack.", func(c *Config, v string) error { c.SlackBotToken = Secret(v); return nil }},
	{"SLACK_APP_TOKEN", "", "", "App-level token (xapp-…) with connections:write, for Socket Mode.", func(c *Config, v string) error { c.SlackAppToken = Secret(v); return nil }},
	{"SLACK_API_URL", "slack.api_url", "", "Slack Web API base URL; default Slack's own. For Slack-compatible test servers and proxies.", setURL(func(c *Config) *string { return &c.SlackAPIURL })},
	{"BOT_DATA_DIR", "data_dir", "./data", "Where durable state (sessions) lives.", setString(func(c *Config) *string { return &c.DataDir })},
	{"BOT_STORE", "store", "sqlite", "Session store: sqlite (BOT_DATA_DIR/askrepo.db, one replica), memory (forgotten on exit), or a postgres://user:password@host:5432/db URL that several replicas share. Never logged.", setStore},
	{"BOT_LEASE_TTL", "lease_ttl", "30s", "With a postgres:// store: how long a thread stays with a replica that stopped renewing its lease (it died or lost the database) before another replica takes it over and resumes its answer; renewed every third of it. At least 1s.", func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return fmt.Errorf("want a duration of 1s or more such as 30s, got %q", v)
		}
		c.LeaseTTL = d
		return nil
	}},
	{"BOT_HTTP_ADDR", "http_addr", ":8080", "Listener for /healthz, /metrics and /mcp; empty disables it.", setString(func(c *Config) *string { return &c.HTTPAddr })},
	{"BOT_CONFIG", "", "", "Optional YAML file with these settings (see configs/askrepo.example.yaml).", setString(func(c *Config) *string { return &c.ConfigFile })},
	{"BOT_LOG_LEVEL", "log.level", "info", "debug, info, warn or error.", setEnum(func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error")},
	{"BOT_LOG_FORMAT", "log.format", "json", "json or text.", setEnum(func(c *Config) *string { return &c.LogFormat }, "json", "text")},
	{"BOT_MAX_STEPS", "agent.max_steps", "25", "Model requests per answer before it must answer with what it has.", setInt(func(c *Config) *int { return &c.MaxSteps }, 1, 200)},
	{"BOT_TOOL_TIMEOUT", "agent.tool_timeout", "30s", "Time limit for one tool call, an MCP server's too, and for connecting to such a server.", setDuration(func(c *Config) *time.Duration { return &c.ToolTimeout })},
	{"BOT_TURN_TIMEOUT", "agent.turn_timeout", "10m", "Time limit for one whole answer.", setDuration(func(c *Config) *time.Duration { return &c.TurnTimeout })},
	{"BOT_DRAIN_TIMEOUT", "drain_timeout", "60s", "On SIGTERM, how long running answers may take to finish.", setDuration(func(c *Config) *time.Duration { return &c.DrainTimeout })},
	{"BOT_RETENTION", "retention", "720h", "Sessions idle longer than this are deleted (default 30 days).", setDuration(func(c *Config) *time.Duration { return &c.Retention })},
	{"BOT_RECOVERY", "recovery", "resume", "Answers cut off by a crash or restart, at the next start: resume from the last step, rerun from the question, or report (ask people to ask again).", setEnum(func(c *Config) *string { return &c.Recovery }, "resume", "rerun", "report")},
	{"BOT_CONTEXT_BUDGET", "agent.context_budget", "0", "Prompt tokens a thread may take before its oldest tool results are elided (once, to keep the prompt cache warm); 0: 60% of the model's known context window, at most 120k.", setInt(func(c *Config) *int { return &c.Budget }, 0, 10_000_000)},
	{"BOT_MAX_CONCURRENT", "slack.max_concurrent", "4", "Threads answered at the same time; more wait in a queue.", setInt(func(c *Config) *int { return &c.Concurrency }, 1, 256)},
	{"BOT_FOLLOWUPS", "slack.followups", "all", "all: any reply in a thread the bot is in is a question; mention: only replies that mention it.", setEnum(func(c *Config) *string { return &c.Followups }, "all", "mention")},
	{"BOT_ALLOW_CHANNELS", "slack.allow_channels", "", "Comma-separated channel IDs the bot answers in (DMs are D…); empty = everywhere it is invited.", setList(func(c *Config) *[]string { return &c.AllowChannel })},
	{"BOT_ALLOW_USERS", "slack.allow_users", "", "Comma-separated user IDs allowed to ask; empty = everyone.", setList(func(c *Config) *[]string { return &c.AllowUsers })},
	// Tracing keeps the names every OpenTelemetry SDK reads, so a
	// platform's usual injection of them works unchanged.
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "", "", "OpenTelemetry collector base URL (OTLP/HTTP, traces to its /v1/traces); unset with the next one: no tracing.", setURL(func(c *Config) *string { return &c.Tracing.Endpoint })},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "", "Full OTLP/HTTP traces URL; overrides the base one.", setURL(func(c *Config) *string { return &c.Tracing.TracesEndpoint })},
	{"BOT_TRACE_CONTENT", "", "false", "Put questions, answers, tool arguments and tool results (file contents) on the spans.", setBool(func(c *Config) *bool { return &c.Tracing.Content })},
	{"BOT_MCP_TOKENS", "", "", "Bearer tokens for /mcp on BOT_HTTP_ADDR, as name=token,name2=token2; each may read every repository (mcp_tokens in BOT_CONFIG limits one to some). None: /mcp is off. Never logged.", setMCPTokens},
	{"BOT_MCP_RATE", "mcp.rate", "60", "Tool calls a minute each MCP token may make (ask counts as one); more get an error saying when to retry.", setInt(func(c *Config) *int { return &c.MCP.Rate }, 1, 100_000)},
}

// Load builds the configuration: defaults, then the YAML file named by
// BOT_CONFIG (looked up in env), then env, then overrides (flags, keyed by
// environment name). env is usually the process environment Over a .env file.
func Load(env func(string) (string, bool), overrides map[string]string) (Config, error) {
	var c Config
	var errs []error
	for _, s := range Settings {
		if err := s.set(&c, s.Default); err != nil {
			panic(fmt.Sprintf("config: bad default for %s: %v", s.Env, err))
		}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := overrides[name]; ok {
			return v, true
		}
		return env(name)
	}
	if file, ok := lookup("BOT_CONFIG"); ok && file != "" {
		errs = append(errs, c.applyYAML(file)...)
		var berrs []error
		c.Budgets, berrs = readBudgets(file)
		errs = append(errs, berrs...)
		errs = append(errs, c.applyMCPServers(file, lookup)...)
	}
	for _, s := range Settings {
		v, ok := lookup(s.Env)
		if !ok {
			continue
		}
		if err := s.set(&c, strings.TrimSpace(v)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Env, err))
		}
	}
	errs = append(errs, c.applyMCPTokens(lookup)...)
	if err := c.validate(); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// SlackEnabled reports whether both Slack tokens are set.
func (c Config) SlackEnabled() bool { return c.SlackBotToken.Set() && c.SlackAppToken.Set() }

// SlackMissing names the Slack settings that are not set.
func (c Config) SlackMissing() []string {
	var missing []string
	if !c.SlackBotToken.Set() {
		missing = append(missing, "SLACK_BOT_TOKEN")
	}
	if !c.SlackAppToken.Set() {
		missing = append(missing, "SLACK_APP_TOKEN")
	}
	return missing
}

// validate checks what single setters cannot: relations between settings
// and token shapes. It never prints a token, only which one is wrong.
func (c Config) validate() error {
	var errs []error
	if c.SlackBotToken.Set() && !strings.HasPrefix(c.SlackBotToken.Reveal(), "xoxb-") {
		errs = append(errs, errors.New("SLACK_BOT_TOKEN: want a bot token starting with xoxb- (OAuth & Permissions page of the Slack app)"))
	}
	if c.SlackAppToken.Set() && !strings.HasPrefix(c.SlackAppToken.Reveal(), "xapp-") {
		errs = append(errs, appTokenShape(c.SlackAppToken.Reveal()))
	}
	if c.RepoPath == "" {
		errs = append(errs, errors.New("REPO_PATH: must not be empty"))
	}
	if err := c.checkBudgets(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// appTokenShape says what an app-level token looks like and where one is
// made, naming the kind of token it got when the prefix tells, never the
// value.
func appTokenShape(got string) error {
	msg := "SLACK_APP_TOKEN: want an app-level token, which starts with xapp- (Slack app settings → Basic Information → App-Level Tokens → Generate Token and Scopes, with the connections:write scope)"
	switch {
	case strings.HasPrefix(got, "xoxb-"):
		msg += "; this one is a bot token (xoxb-), which belongs in SLACK_BOT_TOKEN"
	case strings.HasPrefix(got, "xoxp-"):
		msg += "; this one is a user token (xoxp-), which the bot does not use"
	}
	return errors.New(msg)
}

// ResolvedRepoName is RepoName, or the checkout directory's base name.
func (c Config) ResolvedRepoName() string {
	if c.RepoName != "" {
		return c.RepoName
	}
	abs, err := filepath.Abs(c.RepoPath)
	if err != nil {
		return filepath.Base(c.RepoPath)
	}
	return filepath.Base(abs)
}

func setString(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *field(c) = v; return nil }
}

func setURL(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v != "" {
			u, err := url.Parse(v)
			if err != nil {
				// url.Parse's error quotes the whole value, credentials
				// included.
				return errors.New("want an http(s) URL, got a value that does not parse as a URL")
			}
			if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("want an http(s) URL, got %q", shownURL(u))
			}
		}
		*field(c) = v
		return nil
	}
}

// shownURL is u as an error may quote it: without user information or
// query, either of which can hold a token (https://TOKEN@host,
// ?api-key=…).
func shownURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" || c.ForceQuery {
		c.RawQuery, c.ForceQuery = "…", false
	}
	return c.String()
}

func setBool(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false, got %q", v)
		}
		*field(c) = b
		return nil
	}
}

func setInt(field func(*Config) *int, lo, hi int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want a whole number from %d to %d, got %q", lo, hi, v)
		}
		*field(c) = n
		return nil
	}
}

func setDuration(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("want a positive duration such as 30s or 5m, got %q", v)
		}
		*field(c) = d
		return nil
	}
}

func setEnum(field func(*Config) *string, allowed ...string) func(*Config, string) error {
	return func(c *Config, v string) error {
		v = strings.ToLower(v)
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("want one of %s, got %q", strings.Join(allowed, ", "), v)
		}
		*field(c) = v
		return nil
	}
}

func setList(field func(*Config) *[]string) func(*Config, string) error {
	return func(c *Config, v string) error {
		var list []string
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				list = append(list, part)
			}
		}
		*field(c) = list
		return nil
	}
}
