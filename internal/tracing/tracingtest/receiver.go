// Package tracingtest is an OTLP/HTTP trace receiver for tests: it decodes
// the protobuf export requests an OpenTelemetry exporter sends, as a
// collector does, and keeps their spans. It imports no internal package.
package tracingtest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name    string
	TraceID string
	SpanID  string
	Parent  string // "" for a root span
	Kind    string // "internal", "client", …
	Status  string // "", "ok" or "error"
	// Attrs are the span's attributes, each value as text: a string as
	// it is, a number in decimal, a list as its items joined by ",".
	Attrs map[string]string
	// Resource are the attributes of the resource it came with.
	Resource map[string]string
}

// Receiver is a running receiver; it is safe for concurrent use.
type Receiver struct {
	srv *httptest.Server

	mu    sync.Mutex
	spans []Span
	bad   []string
}

// New starts a receiver that t closes. It accepts POST /v1/traces with a
// protobuf body (gzip or not) and answers as a collector does.
func New(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.srv.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, b := range r.bad {
			t.Errorf("OTLP receiver: %s", b)
		}
	})
	return r
}

// Endpoint is the base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it.
func (r *Receiver) Endpoint() string { return r.srv.URL }

// Spans are the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if err := r.receive(req); err != nil {
		r.mu.Lock()
		r.bad = append(r.bad, err.Error())
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *Receiver) receive(req *http.Request) error {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		return fmt.Errorf("%s %s: want POST /v1/traces", req.Method, req.URL.Path)
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return fmt.Errorf("Content-Type %q: want application/x-protobuf", ct)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return fmt.Errorf("gzip body: %w", err)
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	var export coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &export); err != nil {
		return fmt.Errorf("decode ExportTraceServiceRequest: %w", err)
	}
	var got []Span
	for _, rs := range export.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{
					Name:     s.GetName(),
					TraceID:  hex.EncodeToString(s.GetTraceId()),
					SpanID:   hex.EncodeToString(s.GetSpanId()),
					Parent:   hex.EncodeToString(s.GetParentSpanId()),
					Kind:     strings.ToLower(strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_")),
					Status:   strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s.GetStatus().GetCode().String(), "STATUS_CODE_"), "UNSET")),
					Attrs:    attrs(s.GetAttributes()),
					Resource: res,
				})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.mu.Unlock()
	return nil
}

func attrs(kvs []*common.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = text(kv.GetValue())
	}
	return m
}

func text(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *common.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *common.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *common.AnyValue_ArrayValue:
		items := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, it := range x.ArrayValue.GetValues() {
			items = append(items, text(it))
		}
		return strings.Join(items, ",")
	}
	return fmt.Sprint(v)
}
