package slackbot

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/askrepo/askrepo/internal/repos"
	"github.com/askrepo/askrepo/internal/usage"
)

// metrics are the bot's Prometheus series, registered on Config.Registry.
type metrics struct {
	turns            *prometheus.CounterVec   // by outcome
	toolCalls        *prometheus.CounterVec   // by tool, outcome
	toolSeconds      *prometheus.HistogramVec // by tool
	stepSeconds      prometheus.Histogram     // model latency per step
	tokens           *prometheus.CounterVec   // by kind: prompt, cached, completion
	slackErrors      *prometheus.CounterVec   // by method
	slackRateLimited *prometheus.CounterVec   // 429s by method
	queueDepth       prometheus.Gauge
	running          prometheus.Gauge
	ackSeconds       prometheus.Histogram
	ackFailures      prometheus.Counter
	unrecorded       prometheus.Counter     // events acked without a record in the store
	ignored          *prometheus.CounterVec // events not answered, by reason
	refused          prometheus.Counter
	connected        prometheus.Gauge
	compactions      prometheus.Counter
	citations        *prometheus.CounterVec // in posted answers, by result: valid, flagged
	feedback         *prometheus.CounterVec // 👍/👎 clicks recorded, by rating: up, down
	usage            *usage.Metrics
	*streamMetrics
}

func newMetrics(reg prometheus.Registerer, prices usage.Prices) (*metrics, error) {
	m := &metrics{
		turns: newCounterVec("turns_total",
			"Turns ended, by outcome (answered, stopped, timeout, model_unavailable, …).", "outcome"),
		toolCalls: newCounterVec("tool_calls_total",
			"Tool calls, by tool and outcome (ok, error).", "tool", "outcome"),
		toolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: "tool_call_seconds",
			Help: "Tool call duration.", Buckets: []float64{.005, .01, .05, .1, .5, 1, 5, 30}}, []string{"tool"}),
		stepSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: "llm_step_seconds",
			Help: "Model latency per agent step.", Buckets: []float64{.25, .5, 1, 2, 4, 8, 16, 32, 64}}),
		tokens: newCounterVec("llm_tokens_total",
			"Tokens used, by kind (prompt, cached: the part of prompt served from cache, completion).", "kind"),
		slackErrors: newCounterVec("slack_api_errors_total",
			"Failed Slack Web API calls, by method (429s included).", "method"),
		slackRateLimited: newCounterVec("slack_api_ratelimited_total",
			"Slack Web API answers of 429, by method.", "method"),
		queueDepth: newGauge("queue_depth",
			"Questions waiting for their turn."),
		running: newGauge("turns_running",
			"Turns running now."),
		ackSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: "socket_ack_seconds",
			Help:    "Time from reading an envelope to queueing its ack; Slack retries after 3s.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 3}}),
		ackFailures: newCounter("socket_ack_failures_total",
			"Envelopes whose ack could not be queued."),
		unrecorded: newCounter("events_unrecorded_total",
			"Events acknowledged although the store could not record them first (it failed or was slow): answered from memory, lost if the process dies before."),
		ignored: newCounterVec("events_ignored_total",
			"Events not answered, by reason (bot_message, duplicate, subtype, …).", "reason"),
		refused: newCounter("questions_refused_total",
			"Questions from channels or users not on the allow-lists."),
		connected: newGauge("socket_connected",
			"1 while the Socket Mode connection is up."),
		compactions: newCounter("history_compactions_total",
			"Thread histories compacted between turns to stay under the context budget."),
		citations: newCounterVec("citations_total",
			"Code citations in posted answers, by result: valid (linked when the repo has a web view) or flagged (no such file, lines past the end).", "result"),
		feedback: newCounterVec("feedback_total",
			"Feedback clicks on answers recorded, by rating (up, down); a person changing their mind counts again.", "rating"),
		streamMetrics: newStreamMetrics(),
	}
	m.feedback.WithLabelValues("up")
	m.feedback.WithLabelValues("down")
	for _, c := range []prometheus.Collector{m.turns, m.toolCalls, m.toolSeconds, m.stepSeconds, m.tokens,
		m.slackErrors, m.slackRateLimited, m.queueDepth, m.running, m.ackSeconds, m.ackFailures, m.unrecorded,
		m.ignored, m.refused, m.connected, m.compactions, m.citations, m.feedback,
		m.streamMessages, m.streamAppends, m.streamFallbacks, m.streamFirstText} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	m.usage, err = usage.NewMetrics(reg, prices)
	return m, err
}

// metricsNamespace prefixes every series name; the constructors below
// fill it in for the plain counters and gauges.
const metricsNamespace = "askrepo"

func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help})
}

func newCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: metricsNamespace, Name: name, Help: help}, labels)
}

func newGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: name, Help: help})
}

// health is the body of /healthz.
type health struct {
	Status string `json:"status"` // "ok" or "unhealthy"
	Error  string `json:"error,omitempty"`
	// Repos is each repository's state (Config.Repos). A repository
	// whose fetches fail, or that never cloned, does not make the service
	// unhealthy (other repos still answer, and a failed fetch keeps the
	// last good checkout); its last_error says what went wrong.
	Repos []repos.RepoHealth `json:"repos,omitempty"`
	// MCPServers is each MCP server's state (Config.ToolServers).
	MCPServers any `json:"mcp_servers,omitempty"`
}

// HTTPHandler serves /healthz (200 and {"status":"ok"} only while Healthy,
// else 503 and the reason in "error"; with each repository's state in
// "repos") and /metrics (the bot's registry, in Prometheus text format).
func (b *Bot) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		h := health{Status: "ok"}
		if err := b.Healthy(); err != nil {
			h = health{Status: "unhealthy", Error: err.Error()}
		}
		h.Repos = b.cfg.Repos.Health()
		if b.cfg.ToolServers != nil {
			h.MCPServers = b.cfg.ToolServers()
		}
		if h.Status != "ok" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(h)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.cfg.Registry, promhttp.HandlerOpts{Registry: b.cfg.Registry}))
	return mux
}
