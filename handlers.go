package conduit

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handlers answer what a server sends its client besides results. These
// are its requests for elicitation, sampling (sampling/createMessage) and
// roots (roots/list), and its log messages. Every field is optional.
//
// A hub's or client's [Options.Handlers] are its own. The capabilities
// they cover (elicitation, sampling, roots) are the ones it declares to
// servers. They answer what no call claims. A call's
// [CallOptions.Handlers] answer what a server sends during that call. So
// a program serving many users (package gateway) can pass each server's
// request on to the user whose call caused it. A call's nil field falls
// back to the hub's.
//
// # Which call a request belongs to
//
// MCP does not say which call a server's request belongs to. The
// exception is the multi-round-trip requests of protocol 2026-07-28. They
// carry the call's own context. Otherwise conduit attributes a server's
// request to the calls in flight to that server:
//
//   - When they all carry the same Handlers, or none carries any, those
//     are asked. They get the context of the most recent call. It carries
//     its values, and is canceled also when the server withdraws its
//     request.
//   - When calls with different Handlers are in flight, the request is
//     refused with an error. Asking the wrong user is the worse risk.
//   - With no call in flight, the hub's Handlers answer.
//
// A log message is attributed the same way. It counts also the calls that
// ended less than a second before. A notification can be handled just
// after the result it preceded. The message is handed the call's context
// without its cancellation. One that no call claims goes to the hub's
// Logging. Without that, it goes to the hub's Logger at debug level.
//
// Log messages are delivered in order on a goroutine of the server's own.
// Logging may be slower than the server. Then at most 256 of them (1 MiB)
// wait, and the oldest are dropped. The Logger is told so at warning
// level.
//
// In protocol 2026-07-28 a server asks by answering with input requests.
// It may do so to a tools/call, prompts/get or resources/read. Conduit
// answers them through these Handlers, as it answers the JSON-RPC
// requests of older protocols. Then it sends the request again with the
// answers, as the SDK's client does. It does so at most 10 times, and 3
// times when the server sheds load. An input request may go unanswered:
// there is no handler, or it fails. That ends the request with
// [ErrInputNotGiven]. Conduit does not send the server something it did
// not ask for.
//
// During a call, conduit calls these with that context. Each must be safe
// for concurrent use.
type Handlers struct {
	// Elicitation answers elicitation/create. Setting it in Options
	// declares the elicitation capability (form mode).
	Elicitation func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	// Sampling answers sampling/createMessage. Setting it in Options
	// declares the sampling capability.
	Sampling func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	// Roots answers roots/list. Setting it in Options declares the roots
	// capability (without listChanged). Without it, a server's roots/list
	// is answered "method not found". Its request for roots in a
	// multi-round-trip result is refused (see ErrInputNotGiven). Neither is
	// told the hub has no roots.
	Roots func(context.Context, *mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
	// Logging receives notifications/message. A server sends them once
	// its client set a level. See [Hub.SetLoggingLevel].
	Logging func(context.Context, *mcp.LoggingMessageRequest)
}

// ErrUnattributed answers a server's request that conduit cannot
// attribute. Calls of different callers are in flight to the server. So
// conduit cannot tell whose request it is (see [Handlers]).
var ErrUnattributed = errors.New("conduit: the request cannot be attributed to one caller: calls of several callers are in flight to this server")

// logLinger is how long after its end a call still claims log messages.
const logLinger = time.Second

// inflight is one request to a server, for attributing what the server
// sends meanwhile.
type inflight struct {
	ctx   context.Context
	h     *Handlers // nil: the call has none of its own
	ended time.Time // zero while the request runs
	// cancel ends the request. A handler deferred what the server asked
	// by a JSON-RPC request, which cannot wait (see Input).
	cancel context.CancelFunc
	// recorded is the answer to a server's request that repeats one asked
	// before the call was deferred (Input.Resend).
	recorded *Input

	mu       sync.Mutex
	deferral *inputDeferral // set when a handler deferred the server's request
}

// deferred returns the deferral a handler made of the request, if any.
func (in *inflight) deferred() *inputDeferral {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.deferral
}

type inflightKey struct{}

// calls is a server's requests in flight. It also keeps each caller's
// latest ended request, for attributing log messages.
type calls struct {
	mu     sync.Mutex
	live   []*inflight
	recent map[*Handlers]*inflight
}

// start registers a request made with ctx. It returns three things:
//
//   - the context to make it with, which lets a multi-round-trip request
//     name its call
//   - the request as registered
//   - the func that ends it
//
// recorded, if any, is the answer to the server's request a deferral
// recorded.
func (cs *calls) start(ctx context.Context, h *Handlers, recorded *Input) (context.Context, *inflight, func()) {
	ctx, cancel := context.WithCancel(ctx)
	in := &inflight{ctx: ctx, h: h, cancel: cancel, recorded: recorded}
	cs.mu.Lock()
	cs.live = append(cs.live, in)
	cs.mu.Unlock()
	return context.WithValue(ctx, inflightKey{}, in), in, func() {
		cancel()
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if i := slices.Index(cs.live, in); i >= 0 {
			cs.live = slices.Delete(cs.live, i, i+1)
		}
		in.ended = time.Now()
		if cs.recent == nil {
			cs.recent = map[*Handlers]*inflight{}
		}
		cs.recent[in.h] = in
		cs.pruneLocked(in.ended)
	}
}

// pruneLocked forgets the calls that ended more than logLinger ago.
func (cs *calls) pruneLocked(now time.Time) {
	for h, in := range cs.recent {
		if now.Sub(in.ended) >= logLinger {
			delete(cs.recent, h)
		}
	}
}

// owner returns the request that ctx names. Else it returns the most
// recent one of the only caller with requests in flight. With lingering,
// it counts those that ended less than logLinger ago. ok is false when
// there are several callers. With no request at all, it returns nil and
// ok.
func (cs *calls) owner(ctx context.Context, lingering bool) (in *inflight, ok bool) {
	if in, ok := ctx.Value(inflightKey{}).(*inflight); ok {
		return in, true
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, c := range cs.live {
		if in != nil && in.h != c.h {
			return nil, false
		}
		in = c
	}
	if lingering {
		cs.pruneLocked(time.Now())
		for _, c := range cs.recent {
			if in != nil && in.h != c.h {
				return nil, false
			}
			if in == nil {
				in = c
			}
		}
	}
	return in, true
}

// detached is ctx's values, canceled when ctx or also ends.
func detached(ctx, also context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(also, cancel)
	return ctx, func() { stop(); cancel() }
}

// routing reports whether the hub routes what servers send to calls.
func (c *core) routing() bool { return c.Handlers != nil }

// serverRequest answers a server's request of type R, which asks for
// ask. Its call may have been deferred for it before (Input.Resend). Then
// the answer recorded for it is given. Else pick finds the handler in the
// Handlers of the call, else in the hub's. A handler may defer a JSON-RPC
// request (DeferInput). That cancels the call it belongs to, which cannot
// wait for the answer (see Input).
func serverRequest[Req any, Res any](cn *conn, ctx context.Context, req Req, ask mcp.InputRequest, method string, pick func(*Handlers) func(context.Context, Req) (Res, error)) (Res, error) {
	var zero Res
	in, ok := cn.calls.owner(ctx, false)
	if !ok {
		return zero, ErrUnattributed
	}
	if in != nil && in.recorded != nil {
		switch a := in.recorded.answerTo(ask).(type) {
		case Res:
			return a, nil
		case *mcp.CreateMessageWithToolsResult:
			// A sampling answer read back from JSON is in its with-tools
			// form; a server's plain request takes one content block.
			if len(a.Content) == 1 {
				if r, ok := any(&mcp.CreateMessageResult{Meta: a.Meta, Content: a.Content[0], Model: a.Model, Role: a.Role, StopReason: a.StopReason}).(Res); ok {
					return r, nil
				}
			}
		}
	}
	hctx := ctx
	legacy := in != nil && ctx.Value(inflightKey{}) == nil
	if legacy {
		// A request the SDK handles on the session's context: it is given
		// the call's values, and ends with the call too.
		var cancel context.CancelFunc
		hctx, cancel = detached(in.ctx, ctx)
		defer cancel()
	}
	var f func(context.Context, Req) (Res, error)
	if in != nil && in.h != nil {
		f = pick(in.h)
	}
	if in == nil && cn.principal != "" {
		// A principal's session asks only the principal's own calls.
		return zero, errors.New("conduit: " + method + " outside any call of the session's principal is not answered")
	}
	if h := cn.core.Handlers; f == nil && h != nil {
		f = pick(h)
	}
	if f == nil {
		return zero, errors.New("conduit: " + method + " is not supported")
	}
	res, err := f(hctx, req)
	if reason, deferred := deferredInput(err); deferred && legacy {
		in.mu.Lock()
		if in.deferral == nil {
			in.deferral = &inputDeferral{reason: reason, input: &Input{
				Requests: mcp.InputRequestMap{resendKey: ask}, Resend: true}}
		}
		in.mu.Unlock()
		// Cancelled before the server reads the refusal: the call ends
		// here, not with what the server makes of the refusal.
		in.cancel()
		return zero, errInputDeferred
	}
	return res, err
}

// errInputDeferred answers a server whose request was deferred. Its call
// is cancelled, and will be sent again.
var errInputDeferred = errors.New("conduit: the request is deferred; the call is cancelled and will be sent again with the answer")

// clientHandlers fills in the handlers and capabilities of a server's
// client from the hub's Handlers.
func (cn *conn) clientHandlers(o *mcp.ClientOptions) {
	cn.featureHandlers(o)
	o.LoggingMessageHandler = cn.onLog
	h := cn.core.Handlers
	if h == nil {
		return
	}
	if h.Elicitation != nil {
		o.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return serverRequest(cn, ctx, req, mcp.InputRequest(req.Params), "elicitation", func(h *Handlers) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return h.Elicitation
			})
		}
	}
	if h.Sampling != nil {
		o.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return serverRequest(cn, ctx, req, mcp.InputRequest(req.Params), "sampling", func(h *Handlers) func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return h.Sampling
			})
		}
	}
	if h.Roots != nil {
		caps := *o.Capabilities
		caps.RootsV2 = &mcp.RootCapabilities{}
		o.Capabilities = &caps
	}
}

// requestsMiddleware answers roots/list through the Handlers. The SDK has
// no handler for it. It also answers elicitation/create as the server
// sent it. The SDK's client refuses some requested schemas that the
// protocol allows (titled multi-select enums). It does so before a handler
// sees them.
//
// Without a Roots handler, roots/list is refused, as the multi-round-trip
// form is. The SDK's own answer is the hub's empty list. That would tell a
// server that nobody has roots.
func (cn *conn) requestsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	h := cn.core.Handlers
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ListRootsRequest:
			if method != "roots/list" {
				break
			}
			if h == nil || h.Roots == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "conduit: roots are not supported"}
			}
			return serverRequest(cn, ctx, r, mcp.InputRequest(r.Params), "roots", func(h *Handlers) func(context.Context, *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
				return h.Roots
			})
		case *mcp.ElicitRequest:
			if method == "elicitation/create" && h != nil && h.Elicitation != nil {
				res, err := serverRequest(cn, ctx, r, mcp.InputRequest(r.Params), "elicitation", func(h *Handlers) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return h.Elicitation
				})
				if err != nil || res == nil {
					return nil, err
				}
				return withDefaults(r.Params, res), nil
			}
		}
		return next(ctx, method, req)
	}
}

// withDefaults fills in an accepted form elicitation's answer. It adds the
// defaults of the requested schema, as the SDK's own client does (the MCP
// spec's SEP-1034). The user's handler need not restate them. A schema the
// validator cannot resolve leaves the answer as it is. The SDK would
// refuse such a schema. res itself is not modified.
func withDefaults(p *mcp.ElicitParams, res *mcp.ElicitResult) *mcp.ElicitResult {
	if p == nil || (p.Mode != "" && p.Mode != "form") || p.RequestedSchema == nil || res.Action != "accept" || res.Content == nil {
		return res
	}
	rs, err := compileSchema(p.RequestedSchema)
	if err != nil {
		return res
	}
	out := *res
	out.Content = maps.Clone(res.Content)
	if rs.ApplyDefaults(&out.Content) != nil {
		return res
	}
	return &out
}
