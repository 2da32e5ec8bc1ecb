package slackbot

import "github.com/prometheus/client_golang/prometheus"

// streamMetrics count the streamed UI.
type streamMetrics struct {
	streamMessages  prometheus.Counter
	streamAppends   prometheus.Counter
	streamFallbacks *prometheus.CounterVec // by Slack's error code
	streamFirstText prometheus.Histogram
}

func newStreamMetrics() *streamMetrics {
	return &streamMetrics{
		streamMessages: newCounter("stream_messages_total",
			"Streamed messages started: one per streamed answer, more for an answer past 12,000 characters or a stream Slack closed."),
		streamAppends: newCounter("stream_appends_total",
			"chat.appendStream calls that Slack took."),
		streamFallbacks: newCounterVec("stream_fallbacks_total",
			"Turns answered as messages because Slack refused to start a stream, by its error code (error: no code).", "reason"),
		streamFirstText: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: metricsNamespace, Name: "stream_first_text_seconds",
			Help:    "Time from the model's first answer text to its first character appended in Slack: the wait for a checked paragraph and the append.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
	}
}
