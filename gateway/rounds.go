package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/conduitmcp/conduit/internal/mrtr"
	"github.com/conduitmcp/conduit/store/once"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A request of a client of protocol 2026-07-28 (tools/call, prompts/get,
// resources/read) is one round of a multi-round-trip exchange. The
// gateway or a server may need something of the client. Then the request
// is answered with an input-required result and a sealed requestState.
// The client's retry, with its answers and that state, goes on. There are
// three cases:
//
//   - An "ask" rule. The gateway's approver does not ask. The call is
//     refused unsent. The round answers with an elicitation that asks the
//     client to approve it. The retry with an accepting answer and the
//     state runs the call, approved without asking again. The decision is
//     the verified state and the client's answer. The pipeline gets it as
//     conduit.CallOptions.Approval, a decision taken beforehand, as a
//     resumed conversation's is.
//   - A server of 2026-07-28 that asks, with its own input-required
//     result. The round answers with the server's input requests. Its
//     requestState is carried inside the gateway's. The retry sends the
//     client's answers and the server's state back to it (conduit.Input).
//   - A server of 2025-11-25 or before that asks by a request during the
//     call. The call goes on in this replica, waiting for the answer. The
//     round answers with the question. The retry gives the answer to the
//     waiting call. The retry must reach the same replica, within
//     ApprovalTimeout. A load balancer that sends it elsewhere is answered
//     so. After the timeout its server is told the client gave no answer.
//     So is every later request of its during the call. This is the only
//     thing of such a client that lives in one replica's memory. It lives
//     there only while its call is in flight.
//
// At most once: a retry's state is used once. Its id is claimed in the
// gateway's store (store.Claims, through package once) before anything
// runs. The answer is recorded. The same state sent again gets the
// recorded answer instead of a second run. While the first is running, it
// gets an error that says so. With a store that replicas share
// (Options.Hub.Store), this holds across replicas. With the default, it
// holds within one process.

// approvalInput is the id of the input request of an approval.
const approvalInput = "conduit_approval"

// claimKey is the store key of a requestState's single use.
func claimKey(id string) string { return "gateway/requestState/" + id }

// A method is how one kind of request is answered.
type method struct {
	name string
	// inputRequired is the method's input-required result.
	inputRequired func(mcp.InputRequestMap, string) mcp.Result
	// zero is an empty result, for a recorded answer to be decoded in.
	zero func() mcp.Result
	// refusal is how the method answers a request that is not run. That
	// is a tool error for a tool call, a JSON-RPC error otherwise.
	refusal func(string) (mcp.Result, error)
}

var (
	toolMethod = &method{
		name: "tools/call",
		inputRequired: func(asks mcp.InputRequestMap, st string) mcp.Result {
			return &mcp.CallToolResult{InputRequests: asks, RequestState: st}
		},
		zero: func() mcp.Result { return new(mcp.CallToolResult) },
		refusal: func(msg string) (mcp.Result, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, nil
		},
	}
	promptMethod = &method{
		name: "prompts/get",
		inputRequired: func(asks mcp.InputRequestMap, st string) mcp.Result {
			return &mcp.GetPromptResult{InputRequests: asks, RequestState: st}
		},
		zero:    func() mcp.Result { return new(mcp.GetPromptResult) },
		refusal: rpcRefusal,
	}
	resourceMethod = &method{
		name: "resources/read",
		inputRequired: func(asks mcp.InputRequestMap, st string) mcp.Result {
			return &mcp.ReadResourceResult{InputRequests: asks, RequestState: st}
		},
		zero:    func() mcp.Result { return new(mcp.ReadResourceResult) },
		refusal: rpcRefusal,
	}
)

func rpcRefusal(msg string) (mcp.Result, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg}
}

// roundRequest is one request of a client without a session.
type roundRequest struct {
	m         *method
	ss        *mcp.ServerSession // the request's own
	b         binding
	responses mcp.InputResponseMap
	state     string    // the requestState sent, if any
	progress  any       // the request's progress token, if any
	task      *taskPlan // how its call becomes a task, if it may
}

// serveRound answers rq, whose call call runs with opts.
func (s *session) serveRound(ctx context.Context, rq *roundRequest, opts *conduit.CallOptions, call func(context.Context, *conduit.CallOptions) (mcp.Result, error)) (mcp.Result, error) {
	g := s.g
	var st *state
	if rq.state != "" {
		var err error
		if st, err = openState(g.sealer, rq.state, rq.b, time.Now()); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "conduit serve: " + err.Error()}
		}
		var res mcp.Result
		var rerr error
		out, err := once.Do(ctx, g.store, claimKey(st.ID), g.claimLifetime(), func(ctx context.Context) ([]byte, error) {
			res, rerr = s.continueRound(ctx, rq, st, opts, call)
			return recordOf(res, rerr)
		})
		switch {
		case out.State == 0:
			// Fail closed: a state whose single use cannot be checked runs nothing.
			g.logger.Warn("gateway: claiming a requestState", "err", err)
			return rq.m.refusal("conduit serve's shared store is unavailable, so it cannot check that this requestState is used once; nothing was run. Retry shortly with the same requestState.")
		case out.State == once.Recorded:
			return g.recorded(rq.m, out)
		case out.State == once.Unknown:
			return rq.m.refusal("This request was made already with the same requestState and is still being answered, or its outcome is unknown: it is not run again.")
		}
		if err != nil || out.Err != nil {
			// The outcome is unknown: a retry with this state is refused.
			g.logger.Warn("gateway: recording an answer", "err", errors.Join(out.Err, err))
		}
		return res, rerr
	}
	opts.Input = &conduit.Input{Responses: rq.responses, Return: true}
	cr, err := g.startCall(ctx, rq, opts, call)
	if err != nil {
		return nil, err
	}
	return cr.answer(ctx, rq)
}

// continueRound goes on where st, the verified state of rq, left off.
func (s *session) continueRound(ctx context.Context, rq *roundRequest, st *state, opts *conduit.CallOptions, call func(context.Context, *conduit.CallOptions) (mcp.Result, error)) (mcp.Result, error) {
	g := s.g
	switch st.Kind {
	case kindApproval:
		opts.Input = &conduit.Input{Return: true}
		// The client's answer is the decision. The verified state says
		// what it decides. The policy still decides first. No answer
		// leaves the approver to ask again, under a new state.
		if a, ok := rq.responses[approvalInput].(*mcp.ElicitResult); ok {
			decision := conduit.Reject("the user canceled the approval request")
			switch a.Action {
			case "accept":
				decision = conduit.Approve()
			case "decline":
				decision = conduit.Reject("the user declined it")
			}
			opts.Approval = &decision
		}
		cr, err := g.startCall(ctx, rq, opts, call)
		if err != nil {
			return nil, err
		}
		return cr.answer(ctx, rq)
	case kindCode:
		// The code runs again from the start. Its calls made already are
		// replayed from the state. The client's answer decides the one asked.
		opts.Input = &conduit.Input{Return: true}
		if st.Approved {
			approved := conduit.Approve()
			opts.Approval = &approved
		}
		ctx = codemode.WithResume(ctx, codeResume(st, rq.responses))
		cr, err := g.startCall(ctx, rq, opts, call)
		if err != nil {
			return nil, err
		}
		return cr.answer(ctx, rq)
	case kindServer:
		opts.Input = &conduit.Input{Responses: rq.responses, RequestState: st.Server, Return: true}
		if st.Approved {
			approved := conduit.Approve()
			opts.Approval = &approved
		}
		cr, err := g.startCall(ctx, rq, opts, call)
		if err != nil {
			return nil, err
		}
		return cr.answer(ctx, rq)
	}
	// kindWait
	cr := g.takeWait(st.Wait)
	if cr == nil {
		return rq.m.refusal(fmt.Sprintf("The call that asked for this input is no longer waiting for it: it waited longer than %v, or it waits in another replica of conduit serve, or the gateway restarted. Make the request again without its requestState.", g.approveWait))
	}
	resp, ok := rq.responses[st.Asked[0]]
	if !ok {
		return cr.park(rq, cr.q)
	}
	cr.q.answer <- answered{resp: resp}
	return cr.answer(ctx, rq)
}

// askApproval answers rq with the question msg. It asks whether to
// approve its call.
func (g *Gateway) askApproval(rq *roundRequest, msg string) (mcp.Result, error) {
	st := &state{ID: newStateID(), Method: rq.b.method, Name: rq.b.name, Args: rq.b.args, Principal: rq.b.principal, Kind: kindApproval}
	return g.inputRequired(rq, st, mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{
		Message:         msg,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
	}})
}

// inputRequired is rq's input-required result asking asks, with st
// sealed as its requestState.
func (g *Gateway) inputRequired(rq *roundRequest, st *state, asks mcp.InputRequestMap) (mcp.Result, error) {
	sealed, err := sealState(g.sealer, st, time.Now().Add(g.approveWait))
	if err != nil {
		return nil, err
	}
	return rq.m.inputRequired(asks, sealed), nil
}

// claimLifetime is how long a state's claim is kept. It is longer than
// the state can be opened.
func (g *Gateway) claimLifetime() time.Duration { return g.approveWait + time.Minute }

// recordedAnswer is a round's answer as its claim records it.
type recordedAnswer struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *jsonrpc.Error  `json:"error,omitempty"`
}

// recordOf is the record of a round's answer, res or err.
func recordOf(res mcp.Result, err error) ([]byte, error) {
	var ra recordedAnswer
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		ra.Error = rpcErr
	} else if ra.Result, err = json.Marshal(res); err != nil {
		return nil, err
	}
	return json.Marshal(ra)
}

// recorded is the answer a claim recorded, for a retry with a state used
// already.
func (g *Gateway) recorded(m *method, out once.Outcome) (mcp.Result, error) {
	if out.Err != nil {
		return nil, fmt.Errorf("conduit serve: the answer could not be recorded: %w", out.Err)
	}
	var ra recordedAnswer
	if err := json.Unmarshal(out.Result, &ra); err != nil {
		return nil, fmt.Errorf("conduit serve: the recorded answer cannot be read: %w", err)
	}
	if ra.Error != nil {
		return nil, ra.Error
	}
	res := m.zero()
	if err := json.Unmarshal(ra.Result, res); err != nil {
		return nil, fmt.Errorf("conduit serve: the recorded answer cannot be read: %w", err)
	}
	return res, nil
}

// callRun is a call of a client without a session, on a goroutine of the
// gateway's. So its server may make a request during it. The client can
// answer that in a later round while the call waits.
type callRun struct {
	g      *Gateway
	id     string
	b      binding // what it calls, for whom
	cancel context.CancelFunc
	done   chan outcome   // the call's end
	asks   chan *question // what its server asks
	gone   chan struct{}  // closed when no client waits for the call any more

	mu       sync.Mutex
	sink     *roundRequest // the request waiting on the call, if any
	sinkCtx  context.Context
	approved bool   // the request carried the call's approval (CallOptions.Approval)
	asking   string // set by decide: the approval question to ask
	asked    int    // questions asked, for their ids
	// codeAsks are the approval questions of run_code's nested calls
	// that deferNested deferred for the client to answer, by reason.
	codeAsks map[string]bool
	q        *question
	timer    *time.Timer
	// taskCaps are the capabilities of the client of the task the call
	// became. No request waits on a task.
	taskCaps *mcp.ClientCapabilities
	opts     *conduit.CallOptions // what it was started with
	call     func(context.Context, *conduit.CallOptions) (mcp.Result, error)
}

type outcome struct {
	res mcp.Result
	err error
}

// A question is a server's request during a call, for the client.
type question struct {
	in     mcp.InputRequest
	answer chan answered // buffered: one answer
}

type answered struct {
	resp mcp.InputResponse
	err  error
}

type runKey struct{}

// runFrom returns the run a call's ctx belongs to.
func runFrom(ctx context.Context) *callRun {
	cr, _ := ctx.Value(runKey{}).(*callRun)
	return cr
}

// startCall starts the call of rq, made with opts, on a goroutine. The
// approval its request carried, if any, is opts.Approval.
func (g *Gateway) startCall(ctx context.Context, rq *roundRequest, opts *conduit.CallOptions, call func(context.Context, *conduit.CallOptions) (mcp.Result, error)) (*callRun, error) {
	cr := &callRun{g: g, id: newStateID(), b: rq.b, done: make(chan outcome, 1), asks: make(chan *question),
		gone: make(chan struct{}), sink: rq, sinkCtx: ctx, approved: opts.Approval != nil && opts.Approval.Allow,
		opts: opts, call: call}
	opts.Handlers = g.runHandlers(rq.b.principal)
	opts.Progress = func(_ *conduit.Call, p conduit.Progress) { cr.notifyProgress(p) }
	// The call may outlive the request that started it (it waits for a
	// retry), but not the gateway.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	cr.cancel = cancel
	cctx = context.WithValue(cctx, runKey{}, cr)
	stop := context.AfterFunc(g.ctx, cancel)
	if !g.goIfOpen(func() {
		defer stop()
		defer cancel()
		res, err := call(cctx, opts)
		cr.done <- outcome{res, err}
	}) {
		cancel()
		return nil, errors.New("conduit serve is closing")
	}
	return cr, nil
}

// answer waits for the call, on behalf of rq. It answers rq with the
// call's result, or with the question it asks. The question is the
// approval the gateway asks, the server's input requests, or what the
// server asks by request.
func (cr *callRun) answer(ctx context.Context, rq *roundRequest) (mcp.Result, error) {
	cr.mu.Lock()
	cr.sink, cr.sinkCtx = rq, ctx
	cr.mu.Unlock()
	defer func() {
		cr.mu.Lock()
		cr.sink, cr.sinkCtx = nil, nil
		cr.mu.Unlock()
	}()
	var after <-chan time.Time
	if rq.task != nil {
		if rq.task.now {
			return cr.g.escalate(ctx, cr, rq)
		}
		t := time.NewTimer(rq.task.after)
		defer t.Stop()
		after = t.C
	}
	var o outcome
	select {
	case o = <-cr.done:
	case q := <-cr.asks:
		return cr.park(rq, q)
	case <-after:
		return cr.g.escalate(ctx, cr, rq)
	case <-ctx.Done():
		cr.cancel() // the client went away
		return nil, ctx.Err()
	}
	cr.mu.Lock()
	asking, approved := cr.asking, cr.approved
	cr.mu.Unlock()
	if asking != "" {
		return cr.g.askApproval(rq, asking)
	}
	if de := (*codemode.DeferredError)(nil); errors.As(o.err, &de) {
		if cr.askedByCode(de) {
			return cr.g.askCode(rq, approved, de)
		}
		res, err := answer(de)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	if o.err != nil {
		return nil, o.err
	}
	if asks, server, ok := mrtr.Requests(o.res); ok {
		st := &state{ID: newStateID(), Method: cr.b.method, Name: cr.b.name, Args: cr.b.args, Principal: cr.b.principal,
			Kind: kindServer, Server: server, Approved: approved}
		return cr.g.inputRequired(rq, st, asks)
	}
	return o.res, nil
}

// park keeps cr waiting for the client's answer to q, for at most
// ApprovalTimeout. It answers rq with the question.
func (cr *callRun) park(rq *roundRequest, q *question) (mcp.Result, error) {
	g := cr.g
	cr.mu.Lock()
	cr.asked++
	key := "conduit_input_" + strconv.Itoa(cr.asked)
	cr.q = q
	cr.mu.Unlock()
	st := &state{ID: newStateID(), Method: cr.b.method, Name: cr.b.name, Args: cr.b.args, Principal: cr.b.principal,
		Kind: kindWait, Wait: cr.id, Asked: []string{key}}
	res, err := g.inputRequired(rq, st, mcp.InputRequestMap{key: q.in})
	if err != nil {
		cr.cancel()
		return nil, err
	}
	g.mu.Lock()
	g.waits[cr.id] = cr
	cr.timer = time.AfterFunc(g.approveWait, func() {
		if g.takeWait(cr.id) == cr {
			// The server is told, and what it asks from now on is refused.
			// The call ends as its server ends it, unseen.
			close(cr.gone)
			q.answer <- answered{err: errNoAnswer(g.approveWait)}
		}
	})
	g.mu.Unlock()
	return res, nil
}

// takeWait takes the call waiting under id, if it still waits.
func (g *Gateway) takeWait(id string) *callRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	cr := g.waits[id]
	if cr != nil {
		delete(g.waits, id)
		cr.timer.Stop()
	}
	return cr
}

// decide is the approval of a call of a client without a session whose
// request carried no decision. A retry's decision is
// CallOptions.Approval, and the approver is not asked. The approval is a
// question for the client. It refuses the call unsent until the retry
// brings the answer. ok is false when the client cannot be asked (it
// declared no elicitation).
func (cr *callRun) decide(req conduit.ApprovalRequest) (a conduit.Approval, ok bool) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if req.Call.Method != cr.b.method || req.Call.Exposed != cr.b.name {
		// Not the call the request names: its client is not asked.
		return conduit.Reject("conduit serve: the approval does not match the request"), true
	}
	caps := cr.taskCaps
	if cr.sink != nil {
		caps = requestCaps(cr.sink.ss)
	}
	if caps == nil || caps.Elicitation == nil {
		return conduit.Approval{}, false
	}
	cr.asking = approvalMessage(req.Call)
	return conduit.Reject("its approval is asked of the client"), true
}

// errNoAnswer is what a server is told of a request the client did not
// answer in time.
func errNoAnswer(d time.Duration) error {
	return fmt.Errorf("conduit serve: the client gave no answer within %v", d)
}

// ask hands the client a server's request during the call, and waits for
// its answer.
func (cr *callRun) ask(ctx context.Context, in mcp.InputRequest) (mcp.InputResponse, error) {
	q := &question{in: in, answer: make(chan answered, 1)}
	select {
	case cr.asks <- q:
	case <-cr.gone:
		return nil, errNoAnswer(cr.g.approveWait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-q.answer:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// caps are the capabilities of the client waiting on the call.
func (cr *callRun) caps() *mcp.ClientCapabilities {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.sink == nil {
		if cr.taskCaps != nil {
			return cr.taskCaps
		}
		return &mcp.ClientCapabilities{}
	}
	return requestCaps(cr.sink.ss)
}

// runHandlers are the Handlers of principal's calls without a session. A
// server may ask by request (protocol 2025-11-25 or before). That request
// goes to the call its context names. conduit attributes such a request
// to the calls in flight to the server (see conduit.Handlers). The calls
// of one principal share these Handlers. So one of them waiting for its
// client (parked) does not make the requests of the principal's later
// calls unattributable. And the most recent call is asked, as in a
// session. Calls of different principals have different Handlers. So a
// request is never given to another principal's client.
func (g *Gateway) runHandlers(principal string) *conduit.Handlers {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h := g.handlers[principal]; h != nil {
		return h
	}
	h := &conduit.Handlers{
		Elicitation: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return callOf(ctx).elicit(ctx, req)
		},
		Sampling: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return callOf(ctx).sample(ctx, req)
		},
		Roots: func(ctx context.Context, req *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
			return callOf(ctx).roots(ctx, req)
		},
		Logging: func(ctx context.Context, req *mcp.LoggingMessageRequest) { callOf(ctx).log(ctx, req) },
	}
	g.handlers[principal] = h
	return h
}

// callOf is the run ctx names. When it names none, it is a run of nothing
// that asks nothing. conduit's attribution does not let that happen.
func callOf(ctx context.Context) *callRun {
	if cr := runFrom(ctx); cr != nil {
		return cr
	}
	return &callRun{}
}

// The call's Handlers take what its server asks by request, for the
// client (protocol 2025-11-25 or before). They take its log messages too.

func (cr *callRun) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return askFor[*mcp.ElicitResult](ctx, cr, "elicitation", cr.caps().Elicitation != nil, req.Params)
}

func (cr *callRun) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	r, err := askFor[*mcp.CreateMessageWithToolsResult](ctx, cr, "sampling", cr.caps().Sampling != nil, req.Params)
	if err != nil {
		return nil, err
	}
	if len(r.Content) != 1 {
		return nil, fmt.Errorf("conduit serve: the client's answer to sampling has %d content blocks, and the server's request takes one", len(r.Content))
	}
	return &mcp.CreateMessageResult{Meta: r.Meta, Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
}

func (cr *callRun) roots(ctx context.Context, req *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return askFor[*mcp.ListRootsResult](ctx, cr, "roots", cr.caps().RootsV2 != nil, req.Params)
}

// askFor asks the client in, for cr, when it declared the capability of
// what. It returns its answer, which must be an R. The SDK decodes an
// input response by its fields. So a sampling answer is always one with
// tools.
func askFor[R mcp.InputResponse](ctx context.Context, cr *callRun, what string, declared bool, in mcp.InputRequest) (R, error) {
	var zero R
	if !declared {
		return zero, fmt.Errorf("conduit serve: the client did not declare the %s capability", what)
	}
	a, err := cr.ask(ctx, in)
	if err != nil {
		return zero, err
	}
	r, ok := a.(R)
	if !ok {
		return zero, fmt.Errorf("conduit serve: the client's answer to %s is not one (%T)", what, a)
	}
	return r, nil
}

// log sends a server's log message to the request waiting on the call.
// The SDK drops it unless the request asked for that level. With no
// request waiting, it is dropped.
func (cr *callRun) log(_ context.Context, req *mcp.LoggingMessageRequest) {
	cr.mu.Lock()
	sink, ctx := cr.sink, cr.sinkCtx
	cr.mu.Unlock()
	if sink != nil && req.Params != nil {
		sink.ss.Log(ctx, req.Params)
	}
}

// notifyProgress sends the server's progress to the request waiting on
// the call, under its progress token, if it gave one.
func (cr *callRun) notifyProgress(p conduit.Progress) {
	cr.mu.Lock()
	sink, ctx := cr.sink, cr.sinkCtx
	cr.mu.Unlock()
	if sink != nil && sink.progress != nil {
		sink.ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: sink.progress, Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}
