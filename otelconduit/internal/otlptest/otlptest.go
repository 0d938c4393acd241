// Package otlptest is a loopback OTLP/HTTP receiver for tests. It is an
// httptest server that decodes what an exporter sends to /v1/traces and
// /v1/metrics. It reads protobuf or JSON, gzipped or not. It keeps what it
// decoded, with the raw bodies.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	colllogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Receiver is the receiver. URL is its endpoint, for
// OTEL_EXPORTER_OTLP_ENDPOINT.
type Receiver struct {
	URL string

	mu       sync.Mutex
	traces   []*colltrace.ExportTraceServiceRequest
	metrics  []*collmetrics.ExportMetricsServiceRequest
	logs     []*colllogs.ExportLogsServiceRequest
	bodies   [][]byte
	types    []string
	failures []string
}

// New starts a receiver, closed with t.
func New(t testing.TB) *Receiver {
	r := &Receiver{}
	hs := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(hs.Close)
	r.URL = hs.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			r.fail(w, "gzip: "+err.Error())
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		r.fail(w, err.Error())
		return
	}
	ct := req.Header.Get("Content-Type")
	unmarshal := proto.Unmarshal
	if strings.HasPrefix(ct, "application/json") {
		unmarshal = unmarshalJSON
	} else if ct != "application/x-protobuf" {
		r.fail(w, "content type "+ct)
		return
	}
	var msg proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		msg = &colltrace.ExportTraceServiceRequest{}
	case "/v1/metrics":
		msg = &collmetrics.ExportMetricsServiceRequest{}
	case "/v1/logs":
		msg = &colllogs.ExportLogsServiceRequest{}
	default:
		r.fail(w, "path "+req.URL.Path)
		return
	}
	if err := unmarshal(data, msg); err != nil {
		r.fail(w, req.URL.Path+": "+err.Error())
		return
	}
	r.mu.Lock()
	switch m := msg.(type) {
	case *colltrace.ExportTraceServiceRequest:
		r.traces = append(r.traces, m)
	case *collmetrics.ExportMetricsServiceRequest:
		r.metrics = append(r.metrics, m)
	case *colllogs.ExportLogsServiceRequest:
		r.logs = append(r.logs, m)
	}
	r.bodies = append(r.bodies, data)
	r.types = append(r.types, ct)
	r.mu.Unlock()
	w.Header().Set("Content-Type", ct)
	if ct == "application/x-protobuf" {
		w.Write(nil) // an empty Export*ServiceResponse
		return
	}
	w.Write([]byte("{}"))
}

func (r *Receiver) fail(w http.ResponseWriter, msg string) {
	r.mu.Lock()
	r.failures = append(r.failures, msg)
	r.mu.Unlock()
	http.Error(w, msg, http.StatusBadRequest)
}

// Failures are the requests the receiver could not read.
func (r *Receiver) Failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.failures...)
}

// Spans returns every span received, in the order received.
func (r *Receiver) Spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, req := range r.traces {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// Traces returns the trace export requests received.
func (r *Receiver) Traces() []*colltrace.ExportTraceServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*colltrace.ExportTraceServiceRequest(nil), r.traces...)
}

// Metrics returns the metric export requests received.
func (r *Receiver) Metrics() []*collmetrics.ExportMetricsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*collmetrics.ExportMetricsServiceRequest(nil), r.metrics...)
}

// ContentTypes returns the content type of each request received.
func (r *Receiver) ContentTypes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.types...)
}

// Contains reports whether any body received holds s, as bytes.
func (r *Receiver) Contains(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bodies {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// Attrs returns OTLP attributes as strings by key.
func Attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return protojson.Format(v)
}

// unmarshalJSON reads OTLP/JSON, whose trace and span ids are hex where
// protobuf's JSON mapping has base64.
func unmarshalJSON(data []byte, m proto.Message) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	hexToBase64(v)
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return protojson.Unmarshal(data, m)
}

func hexToBase64(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
				if b, err := hex.DecodeString(s); err == nil {
					x[k] = base64.StdEncoding.EncodeToString(b)
				}
				continue
			}
			hexToBase64(e)
		}
	case []any:
		for _, e := range x {
			hexToBase64(e)
		}
	}
}

// LogRecords returns every log record received, in order.
func (r *Receiver) LogRecords() []*logspb.LogRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*logspb.LogRecord
	for _, req := range r.logs {
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				out = append(out, sl.LogRecords...)
			}
		}
	}
	return out
}
