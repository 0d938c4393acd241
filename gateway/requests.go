package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/modelresult"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/conduitmcp/conduit/skills"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session's requests: tools/call, prompts/get, resources/read,
// completion/complete, resources/subscribe. Each runs through the hub's
// pipeline for the session's principal and with its taint.

// forwardMeta adds to out the _meta a client sent with a request, to pass
// on to the server. The requests are tools/call, prompts/get,
// resources/read and completion/complete. Two kinds of key are left out:
//
//   - the progress token, which is conduit's to set (progress comes back
//     through the call);
//   - the io.modelcontextprotocol/ keys, which describe the client's hop,
//     not the call. What of them the server is to know, clientMeta passes
//     on.
//
// A trace context in it (traceparent, tracestate, baggage) reaches the
// hub's Trace as CallStartInfo.Meta. The Trace's
// span continues it. The hub's Trace.RequestMeta then replaces it with the
// span's own. So the server's span is a child of conduit's, not of the
// client's.
func forwardMeta(m, out mcp.Meta) mcp.Meta {
	for k, v := range m {
		if k == "progressToken" || k == MetaConversation || strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// callTool runs a client's tools/call of name, offered by ts, through the
// hub's pipeline. A view's call runs as a round of a multi-round-trip
// exchange.
func (s *session) callTool(ctx context.Context, ts *conduit.ToolSet, name string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	opts, conv, err := s.callOptions(ctx, ts, req.Params.Meta)
	if err != nil {
		return answer(err)
	}
	opts.Meta = clientMeta(req.Session, req.Params.Meta, forwardMeta(req.Params.Meta, opts.Meta))
	var args any
	if len(req.Params.Arguments) > 0 {
		args = req.Params.Arguments
	}
	call := func(ctx context.Context, opts *conduit.CallOptions) (mcp.Result, error) {
		res, err := s.g.callTool(context.WithValue(ctx, sessionKey{}, s), name, args, opts)
		t, ok := ts.Lookup(name)
		if ok {
			if terr := s.taintFrom(ctx, opts, conv, t.Server, err); terr != nil {
				return answer(terr)
			}
		}
		if err != nil {
			return answer(err)
		}
		return s.g.budget(ctx, name, t, res), nil
	}
	var rq *roundRequest
	if s.rounds(req.Session) {
		d, err := argsDigest(req.Params.Arguments)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the arguments are not JSON: " + err.Error()}
		}
		rq = s.roundRequest(toolMethod, req.Session, name, d, req.Params.InputResponses, req.Params.RequestState, req.Params.GetProgressToken())
		t, _ := ts.Lookup(name)
		if rq.task, err = s.g.tasks.plan(name, t, req); err != nil {
			return nil, err
		}
	} else if token := req.Params.GetProgressToken(); token != nil {
		ss := req.Session
		opts.Progress = func(_ *conduit.Call, p conduit.Progress) {
			ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}
	res, err := s.serve(ctx, rq, opts, call)
	if err != nil {
		return nil, err
	}
	return res.(*mcp.CallToolResult), nil
}

// serve makes a request's call. A view's runs as a round, and rq says
// what the request is. A session's runs at once.
func (s *session) serve(ctx context.Context, rq *roundRequest, opts *conduit.CallOptions, call func(context.Context, *conduit.CallOptions) (mcp.Result, error)) (mcp.Result, error) {
	if rq == nil {
		return call(ctx, opts)
	}
	return s.serveRound(ctx, rq, opts, call)
}

// budget cuts the result of tool name (t, nil when unknown) to its
// budget. That is its server's budget, else the gateway's, resolved as
// for a model's turn. The gateway has none by default.
func (g *Gateway) budget(ctx context.Context, name string, t *conduit.Tool, res *mcp.CallToolResult) *mcp.CallToolResult {
	own, fallback := 0, g.maxTokens
	if t != nil {
		own = t.MaxResultTokens
	}
	if fallback <= 0 {
		fallback = -1 // none, where the turn's default would be 25,000
	}
	limit := turn.ResultBudget(own, fallback)
	if limit <= 0 {
		return res
	}
	out, n := modelresult.Cut(res, limit)
	if out != res {
		g.logger.WarnContext(ctx, "conduit: a tool result was cut to its budget", "tool", name, "tokens", n, "budget", limit)
	}
	return out
}

func (s *session) getPrompt(ctx context.Context, name string, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	s.mu.Lock()
	var server string
	if p := s.prompts[name]; p != nil {
		server = p.Server
	}
	s.mu.Unlock()
	opts, conv, err := s.callOptions(ctx, nil, req.Params.Meta)
	if err != nil {
		return nil, requestError(err)
	}
	opts.Meta = clientMeta(req.Session, req.Params.Meta, forwardMeta(req.Params.Meta, opts.Meta))
	call := s.rpcCall(conv, server, func(ctx context.Context, opts *conduit.CallOptions) (mcp.Result, error) {
		return s.g.src.GetPrompt(ctx, name, req.Params.Arguments, opts)
	})
	var rq *roundRequest
	if s.rounds(req.Session) {
		args, _ := json.Marshal(req.Params.Arguments) // a map of strings
		d, _ := argsDigest(args)
		rq = s.roundRequest(promptMethod, req.Session, name, d, req.Params.InputResponses, req.Params.RequestState, nil)
	}
	res, err := s.serve(ctx, rq, opts, call)
	if err != nil {
		return nil, err
	}
	return res.(*mcp.GetPromptResult), nil
}

func (s *session) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	s.mu.Lock()
	server, _ := s.rset.Server(req.Params.URI)
	s.mu.Unlock()
	opts, conv, err := s.callOptions(ctx, nil, req.Params.Meta)
	if err != nil {
		return nil, requestError(err)
	}
	opts.Meta = clientMeta(req.Session, req.Params.Meta, forwardMeta(req.Params.Meta, opts.Meta))
	read := func(ctx context.Context, opts *conduit.CallOptions) (mcp.Result, error) {
		return s.g.src.ReadResource(ctx, req.Params.URI, opts)
	}
	if s.skills && isSkillURI(req.Params.URI) {
		// A skill's file: of a skill the principal may load, verified.
		sk, err := s.skillOf(ctx, req.Params.URI, req.Params.Meta)
		if err != nil {
			return nil, err
		}
		server = sk.Server
		read = func(ctx context.Context, opts *conduit.CallOptions) (mcp.Result, error) {
			res, err := skills.ReadResult(ctx, s.g.src, sk, req.Params.URI, opts)
			if err != nil {
				return nil, skillError(err)
			}
			return res, nil
		}
	}
	call := s.rpcCall(conv, server, read)
	var rq *roundRequest
	if s.rounds(req.Session) {
		rq = s.roundRequest(resourceMethod, req.Session, req.Params.URI, "", req.Params.InputResponses, req.Params.RequestState, nil)
	}
	res, err := s.serve(ctx, rq, opts, call)
	if err != nil {
		return nil, err
	}
	return res.(*mcp.ReadResourceResult), nil
}

// rpcCall is the call of a prompts/get or resources/read of the session,
// which do makes. Its output taints the principal (and conv) with server.
// An error is the request's JSON-RPC error.
func (s *session) rpcCall(conv, server string, do func(context.Context, *conduit.CallOptions) (mcp.Result, error)) func(context.Context, *conduit.CallOptions) (mcp.Result, error) {
	return func(ctx context.Context, opts *conduit.CallOptions) (mcp.Result, error) {
		res, err := do(context.WithValue(ctx, sessionKey{}, s), opts)
		if terr := s.taintFrom(ctx, opts, conv, server, err); terr != nil {
			return nil, requestError(terr)
		}
		if err != nil {
			return nil, requestError(err)
		}
		return res, nil
	}
}

// roundRequest is a request of a view's client, to be served as a round.
func (s *session) roundRequest(m *method, ss *mcp.ServerSession, name, args string, responses mcp.InputResponseMap, state string, progress any) *roundRequest {
	return &roundRequest{m: m, ss: ss, b: binding{method: m.name, name: name, args: args, principal: s.principal},
		responses: responses, state: state, progress: progress}
}

// complete asks the server of the reference for completions. The values
// are the server's output. The client shows them to its user, and they
// may end up in a prompt's arguments. So they taint the session as a
// prompt or a resource does. An answer without values carries no text of
// the server's, so it taints nothing. Conduit answers so itself for a
// server that offers no completions.
func (s *session) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	server := s.completionServer(req.Params)
	opts, conv, err := s.callOptions(ctx, nil, req.Params.Meta)
	if err != nil {
		return nil, requestError(err)
	}
	opts.Meta = clientMeta(req.Session, req.Params.Meta, forwardMeta(req.Params.Meta, opts.Meta))
	// The params' own _meta is the client's hop's: what of it goes on is
	// in opts.Meta.
	p := *req.Params
	p.Meta = nil
	res, err := s.g.src.Complete(ctx, &p, opts)
	if err != nil || len(res.Completion.Values) > 0 {
		if terr := s.taintFrom(ctx, opts, conv, server, err); terr != nil {
			return nil, requestError(terr)
		}
	}
	if err != nil {
		return nil, requestError(err)
	}
	return res, nil
}

func (s *session) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if err := s.g.subscribe(ctx, s, req.Params.URI); err != nil {
		return requestError(err)
	}
	s.mu.Lock()
	s.subs[req.Params.URI] = true
	s.mu.Unlock()
	return nil
}

func (s *session) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	s.mu.Lock()
	had := s.subs[req.Params.URI]
	delete(s.subs, req.Params.URI)
	s.mu.Unlock()
	if !had {
		return nil
	}
	if err := s.g.unsubscribe(ctx, s, req.Params.URI); err != nil {
		return requestError(err)
	}
	return nil
}

func (s *session) subscriptions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.subs))
}
