package config

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// applyYAML applies the settings of the YAML file at path and returns its
// problems, each with its line, in the file's order.
func (c *Config) applyYAML(path string) []error {
	values, err := readYAML(path)
	if err != nil {
		return []error{err}
	}
	type problem struct {
		line int
		err  error
	}
	var problems []problem
	for _, s := range Settings {
		v, ok := values[s.YAML]
		if !ok || s.YAML == "" {
			continue
		}
		if err := s.set(c, v.value); err != nil {
			problems = append(problems, problem{v.line, fmt.Errorf("%s: line %d: %s: %w", path, v.line, s.YAML, err)})
		}
	}
	for k, v := range values {
		if !slices.ContainsFunc(Settings, func(s Setting) bool { return s.YAML == k }) {
			problems = append(problems, problem{v.line, fmt.Errorf("%s: line %d: unknown setting %q", path, v.line, k)})
		}
	}
	slices.SortStableFunc(problems, func(a, b problem) int { return a.line - b.line })
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p.err
	}
	return errs
}

// yamlValue is one setting of the YAML file and the line it is on.
type yamlValue struct {
	value string
	line  int
}

// readYAML flattens a YAML document into dotted keys ("slack.followups")
// with scalar values as written and lists joined by commas, so the file
// goes through the same setters as the environment. The repos list is
// left to the package that reads repositories, and the other sections
// named in sections to their own readers.
// sections are the top-level sections of BOT_CONFIG that are lists or
// structures of their own, read by their own readers rather than as
// settings: repos (internal/repos), budgets (readBudgets), mcp_servers
// (applyMCPServers), mcp_tokens (readMCPTokens).
var sections = map[string]bool{"repos": true, "budgets": true, "mcp_servers": true, mcpTokensKey: true}

func readYAML(path string) (map[string]yamlValue, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("BOT_CONFIG: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("BOT_CONFIG: %s is not valid YAML: %w", path, err)
	}
	out := map[string]yamlValue{}
	if len(doc.Content) == 0 {
		return out, nil // an empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("BOT_CONFIG: %s: line %d: want a mapping of settings such as \"openai:\" and \"repos:\"", path, root.Line)
	}
	var walk func(key string, n *yaml.Node, line int)
	walk = func(key string, n *yaml.Node, line int) {
		switch n.Kind {
		case yaml.AliasNode:
			walk(key, n.Alias, line)
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if key == "" && sections[k.Value] {
					continue
				}
				sub := k.Value
				if key != "" {
					sub = key + "." + k.Value
				}
				walk(sub, n.Content[i+1], k.Line)
			}
		case yaml.SequenceNode:
			parts := make([]string, 0, len(n.Content))
			for _, item := range n.Content {
				parts = append(parts, item.Value)
			}
			out[key] = yamlValue{strings.Join(parts, ","), line}
		default:
			v := n.Value
			if n.Tag == "!!null" {
				v = ""
			}
			out[key] = yamlValue{v, line}
		}
	}
	walk("", root, root.Line)
	return out, nil
}
