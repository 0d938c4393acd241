package otelconduit

import (
	"context"
	"encoding/json"
	"errors"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/global"
	"slices"
	"strconv"
	"sync"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/conduitmcp/conduit/otelconduit"

// Options configure the bridge. The zero value is fine: the global
// providers and propagator, nothing opted in.
type Options struct {
	// TracerProvider makes the spans (default otel.GetTracerProvider()).
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metric (default otel.GetMeterProvider()).
	MeterProvider metric.MeterProvider
	// Propagator injects trace context into each request's _meta. The
	// default is otel.GetTextMapPropagator(). It injects nothing until one
	// is set with otel.SetTextMapPropagator.
	Propagator propagation.TextMapPropagator
	// LoggerProvider makes the audit trail's log records (default
	// global.GetLoggerProvider(), a no-op until one is set).
	LoggerProvider otellog.LoggerProvider

	// RecordArguments records each call's arguments as
	// gen_ai.tool.call.arguments. They are recorded as the model wrote them,
	// after-hooks' changes included. The conventions make it opt-in, since
	// arguments may hold anything.
	RecordArguments bool
	// RecordResults records each successful call's result, as
	// gen_ai.tool.call.result (opt-in, likewise).
	RecordResults bool
	// RecordMessages records the texts that may quote arguments or carry a
	// person's words:
	//
	//   - the message a model is shown for a failed call, as the status
	//     description;
	//   - a validation failure's reason, as an event attribute;
	//   - a hook's error, likewise;
	//   - an approver's reason, likewise.
	RecordMessages bool
}

// Telemetry is the bridge. Its Trace and AdaptersTrace report to
// OpenTelemetry. It is safe for concurrent use. One Telemetry may serve any
// number of hubs and clients.
type Telemetry struct {
	o              Options
	tracer         trace.Tracer
	duration       metric.Float64Histogram
	serverDuration metric.Float64Histogram
	prop           propagation.TextMapPropagator
	logger         otellog.Logger

	// A call's metric attributes and its decision event's, made once for
	// each distinct set. Building an attribute set is most of what recording
	// costs.
	ops       cache[opKey, metric.RecordOption]
	served    cache[serverKey, metric.RecordOption]
	decisions cache[decisionKey, trace.EventOption]
}

// opKey is what mcp.client.operation.duration's attributes are made of. name
// is the tool's for tools/call. It is the prompt's for prompts/get and
// completion/complete.
type opKey struct {
	method, name, errType, code, protocol, transport, host string
	port                                                   int
}

type decisionKey struct {
	decision conduit.Decision
	rule     string
	matched  bool
}

// cache is a map of values made once per key, up to maxCached keys. Beyond
// that, values are made each time. It is safe for concurrent use.
type cache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// maxCached bounds a cache. The keys are few (tools, servers, rules and
// outcomes), but they come from outside.
const maxCached = 4096

func (c *cache[K, V]) get(k K, make func() V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = make()
	c.mu.Lock()
	if c.m == nil {
		c.m = map[K]V{}
	}
	if len(c.m) < maxCached {
		c.m[k] = v
	}
	c.mu.Unlock()
	return v
}

// durationBuckets are the bucket boundaries the conventions give
// mcp.client.operation.duration and mcp.server.operation.duration, in
// seconds.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// New returns a bridge configured by o, which may be nil.
func New(o *Options) (*Telemetry, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.TracerProvider == nil {
		opts.TracerProvider = otel.GetTracerProvider()
	}
	if opts.MeterProvider == nil {
		opts.MeterProvider = otel.GetMeterProvider()
	}
	if opts.LoggerProvider == nil {
		opts.LoggerProvider = global.GetLoggerProvider()
	}
	t := &Telemetry{o: opts, prop: opts.Propagator}
	t.logger = opts.LoggerProvider.Logger(ScopeName,
		otellog.WithInstrumentationVersion(conduit.Version), otellog.WithSchemaURL(semconv.SchemaURL))
	t.tracer = opts.TracerProvider.Tracer(ScopeName,
		trace.WithInstrumentationVersion(conduit.Version), trace.WithSchemaURL(semconv.SchemaURL))
	meter := opts.MeterProvider.Meter(ScopeName,
		metric.WithInstrumentationVersion(conduit.Version), metric.WithSchemaURL(semconv.SchemaURL))
	var err error
	t.duration, err = meter.Float64Histogram("mcp.client.operation.duration",
		metric.WithDescription("The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, err
	}
	t.serverDuration, err = meter.Float64Histogram("mcp.server.operation.duration",
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Trace returns the hooks to set as a hub's or client's Options.Trace.
func (t *Telemetry) Trace() *conduit.Trace {
	return &conduit.Trace{
		CallStart:        t.callStart,
		Decided:          t.decided,
		Approved:         t.approved,
		HookDenied:       t.hookDenied,
		ValidationFailed: t.validationFailed,
		CallDone:         t.callDone,
		ListStart:        t.listStart,
		ListDone:         t.listDone,
		RequestStart:     t.requestStart,
		RequestDone:      t.requestDone,
		RequestMeta:      t.requestMeta,
		PinDrift:         t.pinDrift,
	}
}

// AdaptersTrace returns the hooks to set as a listing's
// adapters.TurnOptions.Trace. Two things become events:
//
//   - a strict-mode fallback;
//   - a result over the budget's warning threshold, or cut.
//
// Each is an event of the span in the listing's (the Execute's) context.
// That is the caller's own span, such as an agent turn's. When that context
// has none recording, the event gets a span of its own.
func (t *Telemetry) AdaptersTrace() *adapters.Trace {
	return &adapters.Trace{StrictFallback: t.strictFallback, ResultBudget: t.resultBudget}
}

// Attribute keys of conduit's own; the conventions' come from semconv.
const (
	keyServer           = attribute.Key("conduit.server")
	keyExposed          = attribute.Key("conduit.tool.exposed")
	keyItems            = attribute.Key("conduit.list.items")
	keyDriftKind        = attribute.Key("conduit.pin.drift")
	keyDriftTool        = attribute.Key("conduit.pin.tool")
	keyPinned           = attribute.Key("conduit.pin.pinned")
	keyListed           = attribute.Key("conduit.pin.listed")
	keyDecision         = attribute.Key("conduit.policy.decision")
	keyRule             = attribute.Key("conduit.policy.rule")
	keyMatched          = attribute.Key("conduit.policy.matched")
	keyAllowed          = attribute.Key("conduit.approval.allowed")
	keyHalt             = attribute.Key("conduit.approval.halt")
	keyApprovalTime     = attribute.Key("conduit.approval.duration")
	keyReason           = attribute.Key("conduit.reason")
	keyHook             = attribute.Key("conduit.hook.name")
	keyStage            = attribute.Key("conduit.hook.stage")
	keyStrictReason     = attribute.Key("conduit.strict.reason")
	keyResultTokens     = attribute.Key("conduit.result.tokens")
	keyResultKept       = attribute.Key("conduit.result.kept_tokens")
	keyResultBudget     = attribute.Key("conduit.result.budget")
	keyResultCut        = attribute.Key("conduit.result.cut")
	methodCall          = "tools/call"
	methodList          = "tools/list"
	methodGetPrompt     = "prompts/get"
	operationExecute    = "execute_tool"
	errTypeToolError    = "tool_error"
	errTypeOther        = "_OTHER"
	eventDecision       = "conduit.policy.decision"
	eventApproval       = "conduit.approval"
	eventHookDenial     = "conduit.hook.denial"
	eventValidation     = "conduit.validation.failure"
	eventStrictFallback = "conduit.strict_fallback"
	eventPinDrift       = "conduit.pin_drift"
	eventResultBudget   = "conduit.result_budget"
)

var (
	attrCall    = semconv.McpMethodNameKey.String(methodCall)
	attrExecute = semconv.GenAIOperationNameExecuteTool
)

// attrPool holds the slices a span's attributes are gathered in.
var attrPool = sync.Pool{New: func() any { s := make([]attribute.KeyValue, 0, 16); return &s }}

// callStartOptions start every call's span. Its attributes are set when it
// ends, in one go. A sampler sees only the span's name and kind.
var callStartOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// localStartOptions start a local tool's span. No request is sent. So it is
// the GenAI conventions' execute_tool span, not an MCP client's.
var localStartOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

func (t *Telemetry) callStart(i conduit.CallStartInfo) context.Context {
	opts := callStartOptions
	name := methodCall
	if i.Local {
		opts, name = localStartOptions, operationExecute
	}
	ctx, links := t.parent(i.Context, i.Meta)
	if links != nil {
		opts = append(slices.Clip(opts), trace.WithLinks(links...))
	}
	ctx, _ = t.tracer.Start(ctx, name, opts...)
	return ctx
}

// parent is the context a call's or request's span starts in. It is ctx,
// with the trace context meta carries in the place of ctx's span. That is a
// gateway's client's context, in params._meta. The MCP conventions make the
// context extracted from _meta the parent. ctx's own span, if any, is then
// linked. A span of ctx may continue that trace already. The SERVER span of
// ServerMiddleware does, for the request that carried the _meta. Such a span
// stays the parent.
func (t *Telemetry) parent(ctx context.Context, meta map[string]any) (context.Context, []trace.Link) {
	if len(meta) == 0 {
		return ctx, nil
	}
	ectx := t.propagator().Extract(ctx, &metaCarrier{m: meta})
	ambient, extracted := trace.SpanContextFromContext(ctx), trace.SpanContextFromContext(ectx)
	if ambient.IsValid() && extracted.IsValid() && ambient.TraceID() == extracted.TraceID() {
		// ctx's span already continues that trace: conduit serve's
		// SERVER span for this request (ServerMiddleware).
		return ctx, nil
	}
	if !ambient.IsValid() || !extracted.IsValid() {
		return ectx, nil
	}
	return ectx, []trace.Link{{SpanContext: ambient}}
}

func (t *Telemetry) propagator() propagation.TextMapPropagator {
	if t.prop != nil {
		return t.prop
	}
	return otel.GetTextMapPropagator()
}

func (t *Telemetry) decided(i conduit.StepInfo) {
	span := trace.SpanFromContext(i.Context)
	if !span.IsRecording() {
		return
	}
	k := decisionKey{i.Decision, i.Rule.String(), i.Matched}
	span.AddEvent(eventDecision, t.decisions.get(k, func() trace.EventOption {
		attrs := []attribute.KeyValue{keyDecision.String(k.decision.String()), keyMatched.Bool(k.matched)}
		if k.matched {
			attrs = append(attrs, keyRule.String(k.rule))
		}
		return trace.WithAttributes(attrs...)
	}))
}

func (t *Telemetry) approved(i conduit.StepInfo) {
	span := trace.SpanFromContext(i.Context)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		keyAllowed.Bool(i.Approval.Allow), keyHalt.Bool(i.Approval.Halt),
		keyApprovalTime.Float64(i.Elapsed.Seconds()),
	}
	if t.o.RecordMessages && i.Approval.Reason != "" {
		attrs = append(attrs, keyReason.String(i.Approval.Reason))
	}
	span.AddEvent(eventApproval, trace.WithAttributes(attrs...))
}

func (t *Telemetry) hookDenied(i conduit.StepInfo) {
	span := trace.SpanFromContext(i.Context)
	if !span.IsRecording() {
		return
	}
	stage := "before"
	if i.After {
		stage = "after"
	}
	attrs := []attribute.KeyValue{keyHook.String(i.Hook), keyStage.String(stage)}
	if t.o.RecordMessages && i.Err != nil {
		attrs = append(attrs, keyReason.String(i.Err.Error()))
	}
	span.AddEvent(eventHookDenial, trace.WithAttributes(attrs...))
}

func (t *Telemetry) validationFailed(i conduit.StepInfo) {
	span := trace.SpanFromContext(i.Context)
	if !span.IsRecording() {
		return
	}
	var attrs []attribute.KeyValue
	if t.o.RecordMessages && i.Err != nil {
		attrs = append(attrs, keyReason.String(i.Err.Error()))
	}
	span.AddEvent(eventValidation, trace.WithAttributes(attrs...))
}

func (t *Telemetry) strictFallback(i adapters.StrictFallbackInfo) {
	attrs := []attribute.KeyValue{keyExposed.String(i.Tool)}
	if i.Err != nil {
		attrs = append(attrs, keyStrictReason.String(i.Err.Error()))
	}
	t.event(i.Context, eventStrictFallback, attrs)
}

func (t *Telemetry) resultBudget(i adapters.ResultBudgetInfo) {
	b := i.Budgeted
	t.event(i.Context, eventResultBudget, []attribute.KeyValue{keyExposed.String(i.Call.Name), keyResultTokens.Int(b.Tokens),
		keyResultKept.Int(b.Kept), keyResultBudget.Int(b.Budget), keyResultCut.Bool(b.Cut)})
}

func (t *Telemetry) pinDrift(i conduit.PinDriftInfo) {
	d := i.Drift
	attrs := []attribute.KeyValue{keyServer.String(d.Server), keyDriftTool.String(d.Tool), keyDriftKind.String(d.Kind.String())}
	if d.Pinned != "" {
		attrs = append(attrs, keyPinned.String(d.Pinned))
	}
	if d.Listed != "" {
		attrs = append(attrs, keyListed.String(d.Listed))
	}
	t.event(i.Context, eventPinDrift, attrs)
}

// event adds an event to the span recording in ctx. There may be none: no
// caller's span, or a listing outside any. Then the event gets a span of its
// own, named as the event, so that it is not lost. A span that is not
// recording because it was sampled out keeps it out.
func (t *Telemetry) event(ctx context.Context, name string, attrs []attribute.KeyValue) {
	if ctx == nil {
		ctx = context.Background()
	}
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.AddEvent(name, trace.WithAttributes(attrs...))
		return
	}
	if span.SpanContext().IsValid() {
		return
	}
	_, span = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
	span.AddEvent(name, trace.WithAttributes(attrs...))
	span.End()
}

func (t *Telemetry) callDone(i conduit.CallDoneInfo) {
	span := trace.SpanFromContext(i.Context)
	recording := span.IsRecording()
	measuring := i.Request != nil && t.duration.Enabled(i.Context)
	if !recording && !measuring {
		span.End()
		return
	}
	call := i.Call
	tool := call.Tool
	if tool == "" {
		tool = call.Exposed // not resolved: the name as the model wrote it
	}
	errType, code, desc := classify(i.Err, i.Result)
	if measuring {
		// The operation's outcome is the request's, not an after-hook's.
		rType, rCode, _ := classify(i.Request.Err, i.Result)
		t.record(i.Context, i.Request, opKey{method: methodCall, name: tool, errType: rType, code: rCode})
	}
	if !recording {
		span.End()
		return
	}
	switch {
	case i.Local:
		span.SetName(operationExecute + " " + tool)
	case call.Tool != "":
		span.SetName(methodCall + " " + call.Tool)
	}
	buf := attrPool.Get().(*[]attribute.KeyValue)
	defer attrPool.Put(buf)
	attrs := (*buf)[:0]
	if !i.Local {
		attrs = append(attrs, attrCall)
	}
	attrs = append(attrs, attrExecute, semconv.GenAIToolName(tool))
	if call.Exposed != tool && call.Exposed != "" {
		attrs = append(attrs, keyExposed.String(call.Exposed))
	}
	if call.ID != "" {
		attrs = append(attrs, semconv.GenAIToolCallID(call.ID))
	}
	if call.Server != "" {
		attrs = append(attrs, keyServer.String(call.Server))
	}
	attrs = appendOutcome(attrs, errType, code)
	if i.Request != nil {
		attrs = appendPeer(attrs, i.Request, true)
	}
	if t.o.RecordArguments && call.Args != nil {
		if b, err := json.Marshal(call.Args); err == nil {
			attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(string(b)))
		}
	}
	if t.o.RecordResults && i.Err == nil && i.Result != nil && !i.Result.IsError {
		if b, err := json.Marshal(i.Result); err == nil {
			attrs = append(attrs, semconv.GenAIToolCallResultKey.String(string(b)))
		}
	}
	span.SetAttributes(attrs...) // which keeps copies, not the slice
	*buf = attrs[:0]
	if errType != "" {
		if desc == "" && t.o.RecordMessages {
			var e *conduit.Error
			if errors.As(i.Err, &e) {
				desc = e.Message
			}
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}

func (t *Telemetry) listStart(i conduit.ListInfo) context.Context {
	method := i.Method
	if method == "" {
		method = methodList
	}
	ctx, _ := t.tracer.Start(i.Context, method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.McpMethodNameKey.String(method), keyServer.String(i.Server)))
	return ctx
}

func (t *Telemetry) listDone(i conduit.ListInfo) {
	span := trace.SpanFromContext(i.Context)
	method := i.Method
	if method == "" {
		method = methodList
	}
	errType, code, desc := classify(i.Err, nil)
	if i.Request != nil && t.duration.Enabled(i.Context) {
		t.record(i.Context, i.Request, opKey{method: method, errType: errType, code: code})
	}
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 12)
		attrs = append(attrs, keyItems.Int(i.Items))
		attrs = appendOutcome(attrs, errType, code)
		if i.Request != nil {
			attrs = appendPeer(attrs, i.Request, true)
		}
		span.SetAttributes(attrs...)
		if errType != "" {
			span.SetStatus(codes.Error, desc)
		}
	}
	span.End()
}

func (t *Telemetry) requestStart(i conduit.CallStartInfo) context.Context {
	ctx, links := t.parent(i.Context, i.Meta)
	ctx, _ = t.tracer.Start(ctx, i.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithLinks(links...))
	return ctx
}

// requestDone ends the span of a prompt, resource or completion request.
// Once the prompt resolves, its name is "prompts/get {prompt}". For a
// prompt's argument it is "completion/complete {prompt}". A resource's URI
// is an attribute, mcp.resource.uri, never part of the name. In the name it
// would make the cardinality unbounded.
func (t *Telemetry) requestDone(i conduit.CallDoneInfo) {
	span := trace.SpanFromContext(i.Context)
	recording := span.IsRecording()
	measuring := i.Request != nil && t.duration.Enabled(i.Context)
	call := i.Call
	var prompt, uri string
	switch {
	case call.Server == "":
		// Not resolved.
	case call.Method == methodGetPrompt:
		prompt = call.Tool
	default:
		uri = call.Tool
	}
	errType, code, desc := classify(i.Err, nil)
	if measuring {
		rType, rCode, _ := classify(i.Request.Err, nil)
		t.record(i.Context, i.Request, opKey{method: i.Method, name: prompt, errType: rType, code: rCode})
	}
	if !recording {
		span.End()
		return
	}
	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs, semconv.McpMethodNameKey.String(i.Method))
	if prompt != "" {
		span.SetName(i.Method + " " + prompt)
		attrs = append(attrs, semconv.GenAIPromptName(prompt))
		if call.Exposed != prompt {
			attrs = append(attrs, keyExposed.String(call.Exposed))
		}
	}
	if uri != "" {
		attrs = append(attrs, semconv.McpResourceURI(uri))
	}
	if call.Server != "" {
		attrs = append(attrs, keyServer.String(call.Server))
	}
	attrs = appendOutcome(attrs, errType, code)
	if i.Request != nil {
		attrs = appendPeer(attrs, i.Request, true)
	}
	span.SetAttributes(attrs...)
	if errType != "" {
		if desc == "" && t.o.RecordMessages {
			var e *conduit.Error
			if errors.As(i.Err, &e) {
				desc = e.Message
			}
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}

// record records a request's duration. k has the method, tool or prompt and
// outcome. record adds the request's peer.
func (t *Telemetry) record(ctx context.Context, r *conduit.RequestInfo, k opKey) {
	k.protocol, k.transport, k.host, k.port = r.ProtocolVersion, r.Transport, r.Address, r.Port
	opt := t.ops.get(k, func() metric.RecordOption {
		attrs := make([]attribute.KeyValue, 0, 12)
		attrs = append(attrs, semconv.McpMethodNameKey.String(k.method))
		switch {
		case k.method == methodCall:
			attrs = append(attrs, attrExecute, semconv.GenAIToolName(k.name))
		case k.name != "":
			attrs = append(attrs, semconv.GenAIPromptName(k.name))
		}
		attrs = appendOutcome(attrs, k.errType, k.code)
		attrs = appendPeer(attrs, r, false)
		return metric.WithAttributeSet(attribute.NewSet(attrs...))
	})
	t.duration.Record(ctx, r.Elapsed.Seconds(), opt)
}

func (t *Telemetry) requestMeta(i conduit.RequestMetaInfo) map[string]any {
	var carrier metaCarrier
	t.propagator().Inject(i.Context, &carrier)
	return carrier.m
}

// metaCarrier is a request's _meta as a propagation carrier, made only
// when a propagator sets a key.
type metaCarrier struct{ m map[string]any }

func (c *metaCarrier) Get(key string) string {
	s, _ := c.m[key].(string)
	return s
}

func (c *metaCarrier) Set(key, value string) {
	if c.m == nil {
		c.m = make(map[string]any, 2)
	}
	c.m[key] = value
}

func (c *metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c.m))
	for k := range c.m {
		keys = append(keys, k)
	}
	return keys
}

// classify is the conventions' error.type of an outcome:
//
//   - the JSON-RPC error code when the server sent one. It also returns the
//     code, and the error's message becomes the status description.
//   - "tool_error" for a result with isError;
//   - conduit's error kind (conduit.Error.String) otherwise.
func classify(err error, res *mcp.CallToolResult) (errType, code, desc string) {
	if err == nil {
		if res != nil && res.IsError {
			return errTypeToolError, "", ""
		}
		return "", "", ""
	}
	var e *conduit.Error
	if errors.As(err, &e) && e.Kind != conduit.ErrServerError {
		return e.Kind.String(), "", ""
	}
	// A server's error, or a listing's, whose errors are the SDK's.
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		code := strconv.FormatInt(rpcErr.Code, 10)
		return code, code, rpcErr.Message
	case errors.Is(err, context.DeadlineExceeded):
		return conduit.ErrTimeout.String(), "", ""
	case errors.Is(err, context.Canceled):
		return conduit.ErrCanceled.String(), "", ""
	case e != nil:
		return e.Kind.String(), "", ""
	}
	return errTypeOther, "", ""
}

// appendOutcome adds error.type and rpc.response.status_code, when set.
func appendOutcome(attrs []attribute.KeyValue, errType, code string) []attribute.KeyValue {
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	if code != "" {
		attrs = append(attrs, semconv.RPCResponseStatusCode(code))
	}
	return attrs
}

// appendPeer adds what the conventions say of the session and server. It
// adds the session and request ids only to spans (withSession). On a metric
// they would make series per session or request. network.protocol.version is
// not among them. Conduit does not know which HTTP version a request went
// over.
func appendPeer(attrs []attribute.KeyValue, r *conduit.RequestInfo, withSession bool) []attribute.KeyValue {
	if withSession {
		if r.SessionID != "" {
			attrs = append(attrs, semconv.McpSessionID(r.SessionID))
		}
		if r.RequestID != "" {
			attrs = append(attrs, semconv.JSONRPCRequestID(r.RequestID))
		}
	}
	if r.ProtocolVersion != "" {
		attrs = append(attrs, semconv.McpProtocolVersion(r.ProtocolVersion))
	}
	switch r.Transport {
	case "stdio":
		attrs = append(attrs, semconv.NetworkTransportPipe)
	case "streamable-http", "sse":
		attrs = append(attrs, semconv.NetworkTransportTCP, semconv.NetworkProtocolName("http"))
	}
	if r.Address != "" {
		attrs = append(attrs, semconv.ServerAddress(r.Address))
		if r.Port > 0 {
			attrs = append(attrs, semconv.ServerPort(r.Port))
		}
	}
	return attrs
}
