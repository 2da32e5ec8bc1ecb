package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Budgets is the budgets section of BOT_CONFIG: limits on what questions
// may spend, and the price table that turns tokens into an estimated cost
// for cost limits and the usage report.
type Budgets struct {
	Limits []Limit
	// Prices are keyed by model name, as OPENAI_MODEL gives it.
	Prices map[string]Price
}

// Limit is one budget: at most Tokens tokens (prompt and completion, cached
// or not) and, when Cost is set, at most Cost of estimated cost, for each
// channel, user or repository (Per) in each UTC day or month (Period).
type Limit struct {
	Per    string  `yaml:"per"`    // channel, user or repo
	Period string  `yaml:"period"` // day or month, in UTC
	Tokens int64   `yaml:"tokens"` // 0: no token limit
	Cost   float64 `yaml:"cost"`   // in the price table's currency; 0: no cost limit
}

// Price is what a model costs per million tokens. Input is for prompt
// tokens the provider did not serve from its cache, Cached for those it
// did, Output for completion tokens.
type Price struct {
	Input  float64 `yaml:"input"`
	Cached float64 `yaml:"cached"`
	Output float64 `yaml:"output"`
}

// Budget scopes and periods, as written in BOT_CONFIG.
const (
	PerChannel  = "channel"
	PerUser     = "user"
	PerRepo     = "repo"
	PeriodDay   = "day"
	PeriodMonth = "month"
)

// Set reports whether any limit is configured.
func (b Budgets) Set() bool { return len(b.Limits) > 0 }

// readBudgets reads the budgets section of the YAML file at path, if any,
// and reports every problem in it at once, each with its line.
func readBudgets(path string) (Budgets, []error) {
	data, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return Budgets{}, nil // applyYAML reports a file it cannot read
	}
	var doc struct {
		Budgets yaml.Node `yaml:"budgets"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Budgets{}, nil // and one that is not YAML
	}
	n := &doc.Budgets
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return Budgets{}, nil
	}
	b, errs := parseBudgets(n)
	for i, e := range errs {
		errs[i] = fmt.Errorf("%s: %w", path, e)
	}
	return b, errs
}

// parseBudgets decodes the budgets mapping: limits (a list) and prices
// (a mapping of model name to its three prices).
func parseBudgets(n *yaml.Node) (Budgets, []error) {
	var b Budgets
	var errs []error
	if n.Kind != yaml.MappingNode {
		return b, []error{fmt.Errorf("line %d: budgets: want a mapping with limits and prices", n.Line)}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "limits":
			var e []error
			b.Limits, e = parseLimits(v)
			errs = append(errs, e...)
		case "prices":
			var e []error
			b.Prices, e = parsePrices(v)
			errs = append(errs, e...)
		default:
			errs = append(errs, fmt.Errorf("line %d: budgets: unknown key %q (known: limits, prices)", k.Line, k.Value))
		}
	}
	return b, errs
}

func parseLimits(n *yaml.Node) ([]Limit, []error) {
	if n.Kind != yaml.SequenceNode {
		return nil, []error{fmt.Errorf("line %d: budgets.limits: want a list of limits, each with per, period and tokens or cost", n.Line)}
	}
	var out []Limit
	var errs []error
	seen := map[[2]string]int{}
	for i, item := range n.Content {
		at := fmt.Sprintf("line %d: budgets.limits[%d]", item.Line, i)
		var l Limit
		if err := decodeStrict(item, &l); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
			continue
		}
		if err := l.check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
			continue
		}
		key := [2]string{l.Per, l.Period}
		if first, dup := seen[key]; dup {
			errs = append(errs, fmt.Errorf("%s: a second limit per %s per %s (the first is budgets.limits[%d]); put tokens and cost in one", at, l.Per, l.Period, first))
			continue
		}
		seen[key] = i
		out = append(out, l)
	}
	return out, errs
}

func (l Limit) check() error {
	var errs []error
	if !slices.Contains([]string{PerChannel, PerUser, PerRepo}, l.Per) {
		errs = append(errs, fmt.Errorf("per: want channel, user or repo, got %q", l.Per))
	}
	if !slices.Contains([]string{PeriodDay, PeriodMonth}, l.Period) {
		errs = append(errs, fmt.Errorf("period: want day or month (UTC), got %q", l.Period))
	}
	if l.Tokens < 0 {
		errs = append(errs, fmt.Errorf("tokens: want a positive number, got %d", l.Tokens))
	}
	if l.Cost < 0 || math.IsNaN(l.Cost) || math.IsInf(l.Cost, 0) {
		errs = append(errs, fmt.Errorf("cost: want a positive amount, got %v", l.Cost))
	}
	if l.Tokens == 0 && l.Cost == 0 {
		errs = append(errs, errors.New("want tokens, cost or both: a limit without either limits nothing"))
	}
	return errors.Join(errs...)
}

func parsePrices(n *yaml.Node) (map[string]Price, []error) {
	if n.Kind != yaml.MappingNode {
		return nil, []error{fmt.Errorf("line %d: budgets.prices: want a mapping of model name to {input, cached, output} per million tokens", n.Line)}
	}
	out := map[string]Price{}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		at := fmt.Sprintf("line %d: budgets.prices.%s", k.Line, k.Value)
		var p Price
		if err := decodeStrict(v, &p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", at, err))
			continue
		}
		for _, f := range []float64{p.Input, p.Cached, p.Output} {
			if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				errs = append(errs, fmt.Errorf("%s: want prices of 0 or more per million tokens, got %v", at, f))
				break
			}
		}
		out[k.Value] = p
	}
	return out, errs
}

// decodeStrict decodes n into v, refusing keys v has no field for: a
// misspelt "token:" must not leave a limit silently unset.
func decodeStrict(n *yaml.Node, v any) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("want a mapping")
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	}
	return nil
}

// checkBudgets checks what needs the rest of the settings: a cost limit
// is only as good as the price of the model that spends it.
func (c Config) checkBudgets() error {
	for _, l := range c.Budgets.Limits {
		if l.Cost == 0 {
			continue
		}
		if _, ok := c.Budgets.Prices[c.OpenAIModel]; !ok {
			return fmt.Errorf("budgets: a cost limit (per %s per %s) needs the price of the model %s: add it under budgets.prices", l.Per, l.Period, c.OpenAIModel)
		}
	}
	return nil
}
