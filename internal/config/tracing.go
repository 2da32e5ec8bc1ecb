package config

// Tracing is where OpenTelemetry traces go and what they may hold. With
// neither endpoint set nothing is traced.
type Tracing struct {
	Endpoint       string // OTEL_EXPORTER_OTLP_ENDPOINT: the collector's base URL
	TracesEndpoint string // OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the full traces URL; wins
	Content        bool   // BOT_TRACE_CONTENT: prompts, answers and tool I/O on the spans
}
