package usage_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askrepo/askrepo/internal/config"
	"github.com/askrepo/askrepo/internal/llm"
	"github.com/askrepo/askrepo/internal/usage"
)

// Two front ends of one process (Slack, MCP) count into the same series
// of one registry, whichever registers first.
func TestMetricsSharedByFrontEnds(t *testing.T) {
	reg := prometheus.NewRegistry()
	prices := usage.Prices{"m": config.Price{Input: 1e6, Cached: 1e6, Output: 1e6}}
	slack, err := usage.NewMetrics(reg, prices)
	if err != nil {
		t.Fatal(err)
	}
	mcp, err := usage.NewMetrics(reg, prices)
	if err != nil {
		t.Fatalf("the second front end: %v", err)
	}
	slack.Count("pay", "m", llm.Usage{PromptTokens: 10, CachedPromptTokens: 4, CompletionTokens: 2}, true)
	mcp.Count("pay", "m", llm.Usage{PromptTokens: 5, CompletionTokens: 1}, false)
	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			got[f.GetName()] += m.GetCounter().GetValue()
		}
	}
	// 6 uncached + 4 cached + 2 out, then 5 uncached + 1 out: 18 tokens,
	// each priced at 1.
	for name, want := range map[string]float64{
		"askrepo_usage_answers_total": 1, "askrepo_usage_estimated_cost_total": 18, "askrepo_usage_tokens_total": 18,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
}
