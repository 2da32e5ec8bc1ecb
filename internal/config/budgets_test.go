package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func loadBudgetsYAML(t *testing.T, doc string, env map[string]string) (Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "askrepo.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{"BOT_CONFIG": p}
	for k, v := range env {
		m[k] = v
	}
	return Load(mapEnv(m), nil)
}

func TestBudgetsParse(t *testing.T) {
	c, err := loadBudgetsYAML(t, `
openai:
  model: gpt-4.1-mini
budgets:
  limits:
    - per: user
      period: day
      tokens: 200000
    - per: channel
      period: month
      tokens: 5000000
      cost: 25.5
    - per: repo
      period: day
      cost: 3
  prices:
    gpt-4.1-mini: {input: 0.40, cached: 0.10, output: 1.60}
    other: {input: 2, output: 8}
`, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Budgets{
		Limits: []Limit{
			{Per: PerUser, Period: PeriodDay, Tokens: 200000},
			{Per: PerChannel, Period: PeriodMonth, Tokens: 5000000, Cost: 25.5},
			{Per: PerRepo, Period: PeriodDay, Cost: 3},
		},
		Prices: map[string]Price{"gpt-4.1-mini": {Input: 0.40, Cached: 0.10, Output: 1.60}, "other": {Input: 2, Output: 8}},
	}
	if d := cmp.Diff(want, c.Budgets); d != "" {
		t.Errorf("budgets (-want +got):\n%s", d)
	}
	if !c.Budgets.Set() {
		t.Error("Set() = false with three limits")
	}
}

// TestBudgetsRefused: every mistake is reported, with its line, and none
// leaves a limit silently off.
func TestBudgetsRefused(t *testing.T) {
	cases := []struct {
		name, doc string
		env       map[string]string
		want      []string
	}{
		{"unknown scope and period", "budgets:\n  limits:\n    - per: team\n      period: week\n      tokens: 5\n",
			nil, []string{"line 3: budgets.limits[0]", `per: want channel, user or repo, got "team"`, `period: want day or month (UTC), got "week"`}},
		{"misspelt key", "budgets:\n  limits:\n    - per: user\n      period: day\n      token: 5\n",
			nil, []string{"budgets.limits[0]", "field token not found"}},
		{"no amount", "budgets:\n  limits:\n    - per: user\n      period: day\n",
			nil, []string{"want tokens, cost or both"}},
		{"negative", "budgets:\n  limits:\n    - per: user\n      period: day\n      tokens: -1\n      cost: -2\n",
			nil, []string{"tokens: want a positive number", "cost: want a positive amount"}},
		{"two of a kind", "budgets:\n  limits:\n    - {per: user, period: day, tokens: 5}\n    - {per: user, period: day, tokens: 9}\n",
			nil, []string{"line 4: budgets.limits[1]: a second limit per user per day"}},
		{"limits not a list", "budgets:\n  limits: {per: user}\n", nil, []string{"want a list of limits"}},
		{"unknown section", "budgets:\n  limit: []\n", nil, []string{`unknown key "limit"`}},
		{"negative price", "budgets:\n  prices:\n    m: {input: -1}\n", nil, []string{"line 3: budgets.prices.m: want prices of 0 or more"}},
		{"unknown price field", "budgets:\n  prices:\n    m: {input: 1, cache: 1}\n", nil, []string{"budgets.prices.m", "field cache not found"}},
		{"cost without the model's price", "budgets:\n  limits:\n    - {per: repo, period: month, cost: 10}\n  prices:\n    gpt-4.1-mini: {input: 1}\n",
			map[string]string{"OPENAI_MODEL": "other-model"}, []string{"needs the price of the model other-model"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadBudgetsYAML(t, tc.doc, tc.env)
			if err == nil {
				t.Fatalf("Load: no error; want one saying %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// TestBudgetsExample: the example file's budgets load as they read.
func TestBudgetsExample(t *testing.T) {
	c, err := Load(mapEnv(map[string]string{"BOT_CONFIG": "../../configs/askrepo.example.yaml"}), nil)
	if err != nil {
		t.Fatalf("Load the example: %v", err)
	}
	b := c.Budgets
	if len(b.Limits) != 2 || b.Limits[1] != (Limit{Per: PerChannel, Period: PeriodMonth, Tokens: 50_000_000, Cost: 40}) {
		t.Errorf("example limits %+v", b.Limits)
	}
	if p := b.Prices[c.OpenAIModel]; p != (Price{Input: 0.40, Cached: 0.10, Output: 1.60}) {
		t.Errorf("example price of %s = %+v", c.OpenAIModel, p)
	}
}
