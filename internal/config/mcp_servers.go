package config

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// MCPServer is one MCP server of BOT_CONFIG's mcp_servers whose tools
// askrepo's agent may call. Exactly one of Command and URL is set.
// Credentials are never part of it: Env and Headers name environment
// variables, whose values are looked up when the server is connected.
type MCPServer struct {
	// Name prefixes the server's tools for the model (NAME__tool) and
	// names it in /healthz and the logs; lowercase [a-z0-9-], unique.
	Name string `yaml:"name"`
	// Command and Args run a server over stdio. The process gets only a
	// few harmless variables of the service's environment (PATH, HOME,
	// locale, temporary directory) and those Env names.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	// Env maps a variable of the stdio server's environment to the name
	// of the service's variable holding its value.
	Env map[string]string `yaml:"env"`
	// URL is a streamable HTTP endpoint.
	URL string `yaml:"url"`
	// Headers maps a header sent to URL to the name of the environment
	// variable holding its whole value ("Authorization: TICKETS_AUTH",
	// with TICKETS_AUTH="Bearer …").
	Headers map[string]string `yaml:"headers"`
	// Tools, when set, is exactly the tools offered, whether or not the
	// server marks them read-only; empty offers every tool the server
	// marks read-only.
	Tools []string `yaml:"tools"`
	// Channels where the tools are offered: Slack channel IDs, "dm" for
	// direct messages, "*" for everywhere, the terminal included.
	Channels []string `yaml:"channels"`
	// Line is the entry's line in the file, for later messages.
	Line int `yaml:"-"`
}

// mcpServerKeys are the keys an mcp_servers entry may have; anything else
// is a typo that would otherwise be silently ignored.
var mcpServerKeys = []string{"name", "command", "args", "env", "url", "headers", "tools", "channels"}

var (
	mcpServerNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`) })
	mcpChannelRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z0-9]{2,}$`) })
	mcpEnvNameRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	mcpHeaderRE     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })
	mcpToolRE       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`) })
)

// applyMCPServers reads the mcp_servers section of the YAML file at path
// into c.MCPServers and returns its problems, each with its line. env
// tells whether the variables the entries name are set: a server whose
// credential is missing would otherwise fail only at its first call.
func (c *Config) applyMCPServers(path string, env func(string) (string, bool)) []error {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil // applyYAML reports it
	}
	servers, errs := parseMCPServers(data)
	for _, s := range servers {
		errs = append(errs, s.missingEnv(env)...)
	}
	for i, e := range errs {
		errs[i] = fmt.Errorf("%s: %w", path, e)
	}
	c.MCPServers = servers
	return errs
}

// parseMCPServers decodes and checks the mcp_servers section of a YAML
// document; a document without one gives none.
func parseMCPServers(data []byte) ([]MCPServer, []error) {
	var doc struct {
		Servers yaml.Node `yaml:"mcp_servers"`
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil // applyYAML reports it
	}
	n := &doc.Servers
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, []error{fmt.Errorf("line %d: mcp_servers: want a list of servers, each with a name and a command or url", n.Line)}
	}
	var servers []MCPServer
	var errs []error
	names := map[string]int{}
	for i, item := range n.Content {
		where := fmt.Sprintf("line %d: mcp_servers[%d]", item.Line, i)
		if item.Kind != yaml.MappingNode {
			errs = append(errs, fmt.Errorf("%s: want a mapping with name, and command or url", where))
			continue
		}
		for k := 0; k+1 < len(item.Content); k += 2 {
			if key := item.Content[k]; !slices.Contains(mcpServerKeys, key.Value) {
				errs = append(errs, fmt.Errorf("line %d: mcp_servers[%d]: unknown key %q (known: %s)", key.Line, i, key.Value, strings.Join(mcpServerKeys, ", ")))
			}
		}
		var s MCPServer
		if err := item.Decode(&s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		s.Line = item.Line
		if s.Name != "" {
			where += " (" + s.Name + ")"
		}
		if first, dup := names[s.Name]; dup && s.Name != "" {
			errs = append(errs, fmt.Errorf("%s: name %q is taken by the entry on line %d; each server needs its own, since it prefixes its tools", where, s.Name, first))
		}
		names[s.Name] = s.Line
		for _, e := range s.problems() {
			errs = append(errs, fmt.Errorf("%s: %w", where, e))
		}
		servers = append(servers, s)
	}
	return servers, errs
}

// problems are what is wrong with the entry on its own.
func (s MCPServer) problems() []error {
	var errs []error
	if !mcpServerNameRE().MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("name %q: want 1 to 32 of a-z, 0-9 and -, starting with a letter or digit (it prefixes the tools: NAME__tool)", s.Name))
	}
	switch {
	case s.Command == "" && s.URL == "":
		errs = append(errs, errors.New("want command (a server run over stdio) or url (streamable HTTP)"))
	case s.Command != "" && s.URL != "":
		errs = append(errs, errors.New("command and url are both set; a server is either run here (command) or reached at url"))
	case s.URL != "":
		errs = append(errs, checkMCPURL(s.URL)...)
		if len(s.Args) > 0 || len(s.Env) > 0 {
			errs = append(errs, errors.New("args and env are for a command; a url server takes headers"))
		}
	default:
		if len(s.Headers) > 0 {
			errs = append(errs, errors.New("headers are for a url; a command takes env"))
		}
	}
	for _, k := range sortedKeys(s.Headers) {
		if !mcpHeaderRE().MatchString(k) {
			errs = append(errs, fmt.Errorf("headers: %q is not a header name", k))
		}
		if v := s.Headers[k]; !mcpEnvNameRE().MatchString(v) {
			errs = append(errs, fmt.Errorf("headers: %s: want the name of the environment variable holding its value, not the value itself", k))
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if !mcpEnvNameRE().MatchString(k) {
			errs = append(errs, fmt.Errorf("env: %q is not a variable name", k))
		}
		if v := s.Env[k]; !mcpEnvNameRE().MatchString(v) {
			errs = append(errs, fmt.Errorf("env: %s: want the name of the environment variable holding its value, not the value itself", k))
		}
	}
	seen := map[string]bool{}
	for _, t := range s.Tools {
		if !mcpToolRE().MatchString(t) {
			errs = append(errs, fmt.Errorf("tools: %q is not a tool name (A-Z, a-z, 0-9, _, . and -, at most 64)", t))
		} else if seen[t] {
			errs = append(errs, fmt.Errorf("tools: %q is listed twice", t))
		}
		seen[t] = true
	}
	if len(s.Channels) == 0 {
		errs = append(errs, errors.New(`channels: want where its tools are offered: channel IDs, "dm", or "*" for everywhere (the terminal too)`))
	}
	for _, c := range s.Channels {
		if c != "*" && c != "dm" && !mcpChannelRE().MatchString(c) {
			errs = append(errs, fmt.Errorf(`channels: %q is not a channel ID; use the ID (C…, shown at the bottom of the channel's details), "dm" or "*"`, c))
		}
	}
	return errs
}

// checkMCPURL accepts an http(s) URL without credentials in it: a token
// belongs in a header named by an environment variable, where no log or
// error shows it.
func checkMCPURL(raw string) []error {
	u, err := url.Parse(raw)
	if err != nil {
		return []error{errors.New("url: want an http(s) URL, got a value that does not parse as a URL")}
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return []error{fmt.Errorf("url: want an http(s) URL, got %q", shownURL(u))}
	}
	if u.User != nil {
		return []error{fmt.Errorf("url %q: holds a user or password; put the credential in headers (e.g. Authorization: NAME_OF_VARIABLE) instead", shownURL(u))}
	}
	return nil
}

// missingEnv names the variables the entry needs that are not set.
func (s MCPServer) missingEnv(env func(string) (string, bool)) []error {
	var errs []error
	check := func(what string, m map[string]string) {
		for _, k := range sortedKeys(m) {
			name := m[k]
			if !mcpEnvNameRE().MatchString(name) {
				continue // problems says so
			}
			if v, ok := env(name); !ok || v == "" {
				errs = append(errs, fmt.Errorf("line %d: mcp_servers (%s): %s: %s: the environment variable %s is not set", s.Line, s.Name, what, k, name))
			}
		}
	}
	check("headers", s.Headers)
	check("env", s.Env)
	return errs
}

// OffersIn reports whether the server's tools are offered to a question
// asked in channel: a Slack channel ID (a direct message's starts with
// D), or "" for the terminal, which only "*" reaches.
func (s MCPServer) OffersIn(channel string) bool {
	if slices.Contains(s.Channels, "*") {
		return true
	}
	if channel == "" {
		return false
	}
	return slices.Contains(s.Channels, channel) || strings.HasPrefix(channel, "D") && slices.Contains(s.Channels, "dm")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
