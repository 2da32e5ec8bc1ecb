package usage

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askrepo/askrepo/internal/llm"
)

// Metrics count what turns spent, by repository and model, on /metrics:
// counters each replica adds its own turns to, so their sum over the
// replicas is what the store holds (gauges refreshed from the store
// would have every replica report the same store-wide totals, which a
// sum would multiply). Every front end of one process (Slack, MCP)
// counts into the same series.
type Metrics struct {
	tokens  *prometheus.CounterVec // by repo, model, kind: uncached_prompt, cached_prompt, completion
	cost    *prometheus.CounterVec // by repo, model
	answers *prometheus.CounterVec // by repo, model
	prices  Prices
}

// NewMetrics registers the usage series on reg, or takes the ones another
// front end of the process registered there already; prices estimate
// the cost.
func NewMetrics(reg prometheus.Registerer, prices Prices) (*Metrics, error) {
	counter := func(name, help string, labels ...string) (*prometheus.CounterVec, error) {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "askrepo", Name: name, Help: help}, labels)
		err := reg.Register(c)
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing, nil
			}
		}
		return c, err
	}
	m := &Metrics{prices: prices}
	var errs [3]error
	m.tokens, errs[0] = counter("usage_tokens_total",
		"Tokens turns spent, by repo, model and kind (uncached_prompt, cached_prompt, completion).", "repo", "model", "kind")
	m.cost, errs[1] = counter("usage_estimated_cost_total",
		"Estimated cost of the tokens turns spent, from the price table of BOT_CONFIG, by repo and model.", "repo", "model")
	m.answers, errs[2] = counter("usage_answers_total",
		"Answers given, by repo and model.", "repo", "model")
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return m, nil
}

// Count adds one turn's spend on repo with model; answered counts it as
// an answer too.
func (m *Metrics) Count(repo, model string, u llm.Usage, answered bool) {
	uncached := max(u.PromptTokens-u.CachedPromptTokens, 0)
	m.tokens.WithLabelValues(repo, model, "uncached_prompt").Add(float64(uncached))
	m.tokens.WithLabelValues(repo, model, "cached_prompt").Add(float64(u.CachedPromptTokens))
	m.tokens.WithLabelValues(repo, model, "completion").Add(float64(u.CompletionTokens))
	cost, _ := m.prices.Cost(model, u)
	m.cost.WithLabelValues(repo, model).Add(cost)
	if answered {
		m.answers.WithLabelValues(repo, model).Inc()
	}
}
