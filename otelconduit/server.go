package otelconduit

import (
	"context"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ServerMiddleware returns the receiving middleware of an MCP server. It
// goes to the Go SDK's mcp.Server.AddReceivingMiddleware. conduit serve's
// sessions take it through gateway.Options.Middleware. Each request the
// server receives becomes a SERVER span. The span is named
// "{mcp.method.name} {target}", as the conventions name it. The target is
// the tool of tools/call or the prompt of prompts/get. The span's parent is
// the trace context the client sent in params._meta. The request's duration
// is recorded as mcp.server.operation.duration. Notifications are not
// recorded.
//
// The span is in the handler's context. So a hub call made there (the
// gateway's) is its child. What a server behind the gateway receives
// continues the same trace: client, conduit serve's SERVER span, conduit's
// CLIENT span, the server's own.
func (t *Telemetry) ServerMiddleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			return t.serve(ctx, method, req, next)
		}
	}
}

// serverStartOptions start every served request's span.
var serverStartOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// serverKey is what mcp.server.operation.duration's attributes are made
// of.
type serverKey struct {
	method, tool, prompt, errType, code, protocol string
	http                                          bool
}

func (t *Telemetry) serve(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	start := time.Now()
	params := req.GetParams()
	if v := reflect.ValueOf(params); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		params = nil // a request without params, whose GetMeta would panic
	}
	var meta map[string]any
	if params != nil {
		meta = params.GetMeta()
	}
	if len(meta) > 0 {
		ctx = t.propagator().Extract(ctx, &metaCarrier{m: meta})
	}
	k := serverKey{method: method, http: req.GetExtra() != nil && req.GetExtra().Header != nil}
	var uri string
	switch p := params.(type) {
	case *mcp.CallToolParamsRaw:
		k.tool = clip(p.Name)
	case *mcp.CallToolParams:
		k.tool = clip(p.Name)
	case *mcp.GetPromptParams:
		k.prompt = clip(p.Name)
	case *mcp.ReadResourceParams:
		uri = p.URI
	case *mcp.SubscribeParams:
		uri = p.URI
	case *mcp.UnsubscribeParams:
		uri = p.URI
	}
	name := method
	if target := k.tool + k.prompt; target != "" {
		name += " " + target
	}
	ctx, span := t.tracer.Start(ctx, name, serverStartOptions...)
	res, err := next(ctx, method, req)

	var session string
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		session = ss.ID()
	}
	if pv, ok := req.(interface{ ProtocolVersion() string }); ok {
		k.protocol = pv.ProtocolVersion()
	}
	if ip, ok := params.(*mcp.InitializeParams); ok && k.protocol == "" {
		k.protocol = ip.ProtocolVersion
	}
	r, _ := res.(*mcp.CallToolResult)
	errType, code, desc := classify(err, r)
	k.errType, k.code = errType, code
	if t.serverDuration.Enabled(ctx) {
		mk := k
		if err != nil {
			// The name of a tool or prompt that is not served (unknown, or
			// hidden by the policy) is whatever the client wrote. As a
			// metric attribute it would make series without bound.
			mk.tool, mk.prompt = "", ""
		}
		t.serverDuration.Record(ctx, time.Since(start).Seconds(), t.served.get(mk, func() metric.RecordOption {
			return metric.WithAttributeSet(attribute.NewSet(mk.attrs(nil)...))
		}))
	}
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 12)
		attrs = k.attrs(attrs)
		if session != "" {
			attrs = append(attrs, semconv.McpSessionID(session))
		}
		if uri != "" {
			attrs = append(attrs, semconv.McpResourceURI(uri))
		}
		span.SetAttributes(attrs...)
		if k.errType != "" {
			span.SetStatus(codes.Error, desc)
		}
	}
	span.End()
	return res, err
}

// attrs appends the attributes a served request's span and metric share.
func (k *serverKey) attrs(attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, semconv.McpMethodNameKey.String(k.method))
	switch {
	case k.tool != "":
		attrs = append(attrs, attrExecute, semconv.GenAIToolName(k.tool))
	case k.prompt != "":
		attrs = append(attrs, semconv.GenAIPromptName(k.prompt))
	}
	attrs = appendOutcome(attrs, k.errType, k.code)
	if k.protocol != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(k.protocol))
	}
	if k.http {
		attrs = append(attrs, semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"))
	} else {
		attrs = append(attrs, semconv.NetworkTransportPipe)
	}
	return attrs
}

// maxTarget bounds the tool or prompt name a served request's span is named
// by. The name comes from the client. MCP names are at most 128 characters.
const maxTarget = 128

// clip is name, cut to maxTarget bytes (and to whole characters).
func clip(name string) string {
	if len(name) <= maxTarget {
		return name
	}
	return strings.ToValidUTF8(name[:maxTarget], "")
}
