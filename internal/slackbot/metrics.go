package slackbot

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/askrepo/askrepo/internal/repos"
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
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns = "askrepo"
	m := &metrics{
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "turns_total",
			Help: "Turns ended, by outcome (answered, stopped, timeout, model_unavailable, …)."}, []string{"outcome"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "tool_calls_total",
			Help: "Tool calls, by tool and outcome (ok, error)."}, []string{"tool", "outcome"}),
		toolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "tool_call_seconds",
			Help: "Tool call duration.", Buckets: []float64{.005, .01, .05, .1, .5, 1, 5, 30}}, []string{"tool"}),
		stepSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "llm_step_seconds",
			Help: "Model latency per agent step.", Buckets: []float64{.25, .5, 1, 2, 4, 8, 16, 32, 64}}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "llm_tokens_total",
			Help: "Tokens used, by kind (prompt, cached: the part of prompt served from cache, completion)."}, []string{"kind"}),
		slackErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "slack_api_errors_total",
			Help: "Failed Slack Web API calls, by method (429s included)."}, []string{"method"}),
		slackRateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "slack_api_ratelimited_total",
			Help: "Slack Web API answers of 429, by method."}, []string{"method"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "queue_depth",
			Help: "Questions waiting for their turn."}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "turns_running",
			Help: "Turns running now."}),
		ackSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "socket_ack_seconds",
			Help:    "Time from reading an envelope to queueing its ack; Slack retries after 3s.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 3}}),
		ackFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "socket_ack_failures_total",
			Help: "Envelopes whose ack could not be queued."}),
		unrecorded: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "events_unrecorded_total",
			Help: "Events acknowledged although the store could not record them first (it failed or was slow): answered from memory, lost if the process dies before."}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "events_ignored_total",
			Help: "Events not answered, by reason (bot_message, duplicate, subtype, …)."}, []string{"reason"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "questions_refused_total",
			Help: "Questions from channels or users not on the allow-lists."}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "socket_connected",
			Help: "1 while the Socket Mode connection is up."}),
		compactions: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "history_compactions_total",
			Help: "Thread histories compacted between turns to stay under the context budget."}),
		citations: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "citations_total",
			Help: "Code citations in posted answers, by result: valid (linked when the repo has a web view) or flagged (no such file, lines past the end)."}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.turns, m.toolCalls, m.toolSeconds, m.stepSeconds, m.tokens,
		m.slackErrors, m.slackRateLimited, m.queueDepth, m.running, m.ackSeconds, m.ackFailures, m.unrecorded,
		m.ignored, m.refused, m.connected, m.compactions, m.citations} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
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
