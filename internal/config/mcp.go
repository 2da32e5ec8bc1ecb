package config

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// MCP is how askrepo serves the Model Context Protocol (bot mcp over
// stdio, /mcp of bot serve over HTTP).
type MCP struct {
	// Tokens may call /mcp; without any, /mcp is off.
	Tokens []MCPToken
	// Rate is the tool calls a minute one token may make (BOT_MCP_RATE).
	Rate int
}

// MCPToken is one bearer token that may call the MCP endpoint of bot serve
// (/mcp). Its value only ever comes from the environment: BOT_MCP_TOKENS
// (name=token pairs, which may read every repository) or the variable an
// mcp_tokens entry of BOT_CONFIG names (which may read the repositories it
// lists).
type MCPToken struct {
	// Name identifies the token in logs and metrics; it is not secret.
	Name  string
	Token Secret
	// Repos are the repositories the token may read; nil: all of them.
	Repos []string
	// Env is the variable the token came from: BOT_MCP_TOKENS or the
	// token_env of its entry.
	Env string
}

// mcpTokensKey is the root key of the BOT_CONFIG section with the tokens'
// entries; like repos, it is read here and not flattened into settings.
const mcpTokensKey = "mcp_tokens"

// minMCPToken is the shortest token accepted: a bearer token is all that
// stands between the network and the repositories.
const minMCPToken = 16

var mcpTokenNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// setMCPTokens reads BOT_MCP_TOKENS: "name=token,name2=token2". It
// replaces the tokens an earlier value gave and never quotes a token.
func setMCPTokens(c *Config, v string) error {
	c.MCP.Tokens = slices.DeleteFunc(c.MCP.Tokens, func(t MCPToken) bool { return t.Env == "BOT_MCP_TOKENS" })
	var errs []error
	for i, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, token, ok := strings.Cut(part, "=")
		name, token = strings.TrimSpace(name), strings.TrimSpace(token)
		switch {
		case !ok || token == "":
			errs = append(errs, fmt.Errorf("entry %d: want name=token (e.g. ci=$(openssl rand -hex 32))", i+1))
			continue
		case !mcpTokenNameRE().MatchString(name):
			errs = append(errs, fmt.Errorf("entry %d: token name %q: want letters, digits, '.', '_' or '-'", i+1, name))
			continue
		}
		c.MCP.Tokens = append(c.MCP.Tokens, MCPToken{Name: name, Token: Secret(token), Env: "BOT_MCP_TOKENS"})
	}
	return errors.Join(errs...)
}

// mcpTokenEntry is one entry of mcp_tokens in BOT_CONFIG.
type mcpTokenEntry struct {
	Name     string   `yaml:"name"`
	TokenEnv string   `yaml:"token_env"`
	Repos    []string `yaml:"repos"`
}

var mcpTokenKeys = []string{"name", "token_env", "repos"}

// applyMCPTokens adds the tokens of BOT_CONFIG's mcp_tokens section, each
// read from the variable it names through lookup, and checks every token
// together: names unique, values long enough and distinct. A section like
//
//	mcp_tokens:
//	  - name: ci
//	    token_env: ASKREPO_MCP_CI     # the variable's name, never the token
//	    repos: [payments]             # what it may read (required)
//
// is checked entry by entry, each problem with its line. That the repos
// exist is for the command to check against the repositories it opened.
func (c *Config) applyMCPTokens(lookup func(string) (string, bool)) []error {
	var errs []error
	if c.ConfigFile != "" {
		errs = c.readMCPTokens(lookup)
	}
	seen := map[string]bool{}
	values := map[[32]byte]string{}
	for _, t := range c.MCP.Tokens {
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("MCP token %q is named twice (in BOT_MCP_TOKENS or mcp_tokens); give each a name of its own", t.Name))
		}
		seen[t.Name] = true
		if len(t.Token.Reveal()) < minMCPToken {
			errs = append(errs, fmt.Errorf("MCP token %q (%s): want at least %d characters, e.g. from openssl rand -hex 32", t.Name, t.Env, minMCPToken))
		}
		sum := sha256.Sum256([]byte(t.Token.Reveal()))
		if other, dup := values[sum]; dup {
			errs = append(errs, fmt.Errorf("MCP tokens %q and %q have the same value; a call could not tell them apart", other, t.Name))
		}
		values[sum] = t.Name
	}
	return errs
}

// readMCPTokens reads the mcp_tokens section of BOT_CONFIG.
func (c *Config) readMCPTokens(lookup func(string) (string, bool)) []error {
	data, err := os.ReadFile(c.ConfigFile)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return nil // reported by applyYAML
	}
	var doc map[string]yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil // reported by applyYAML
	}
	n, ok := doc[mcpTokensKey]
	if !ok || n.Tag == "!!null" {
		return nil
	}
	at := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s: line %d: %s: %s", c.ConfigFile, line, mcpTokensKey, fmt.Sprintf(format, args...))
	}
	if n.Kind != yaml.SequenceNode {
		return []error{at(n.Line, "want a list of tokens, each with a name and a token_env")}
	}
	var errs []error
	for _, item := range n.Content {
		var e mcpTokenEntry
		if item.Kind != yaml.MappingNode {
			errs = append(errs, at(item.Line, "want a mapping with name, token_env and repos"))
			continue
		}
		for i := 0; i+1 < len(item.Content); i += 2 {
			if k := item.Content[i]; !slices.Contains(mcpTokenKeys, k.Value) {
				errs = append(errs, at(k.Line, "unknown key %q; the keys are %s", k.Value, strings.Join(mcpTokenKeys, ", ")))
			}
		}
		if err := item.Decode(&e); err != nil {
			errs = append(errs, at(item.Line, "%v", err))
			continue
		}
		if !mcpTokenNameRE().MatchString(e.Name) {
			errs = append(errs, at(item.Line, "name %q: want letters, digits, '.', '_' or '-'", e.Name))
			continue
		}
		if e.TokenEnv == "" {
			errs = append(errs, at(item.Line, "%s: token_env must name the variable that holds the token", e.Name))
			continue
		}
		v, _ := lookup(e.TokenEnv)
		if strings.TrimSpace(v) == "" {
			errs = append(errs, at(item.Line, "%s: %s is not set; set it to the token (e.g. openssl rand -hex 32)", e.Name, e.TokenEnv))
			continue
		}
		if len(e.Repos) == 0 {
			errs = append(errs, at(item.Line, "%s: repos must list the repositories the token may read (leave the entry out and use BOT_MCP_TOKENS for a token that reads all)", e.Name))
			continue
		}
		c.MCP.Tokens = append(c.MCP.Tokens, MCPToken{Name: e.Name, Token: Secret(strings.TrimSpace(v)), Repos: e.Repos, Env: e.TokenEnv})
	}
	return errs
}
