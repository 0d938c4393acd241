package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxShownArgs is how much of a call's arguments an approval request
// shows, in bytes.
const maxShownArgs = 2 << 10

// approve is the hub's approver. With the console's approvals, a call
// the policy asks about waits for an admin there (console.hold).
// Otherwise it becomes an elicitation request to the client of the
// session that made it. Accept runs the call. Decline, cancel, an error
// or no answer in time deny it.
//
// A client of protocol 2026-07-28 has no session. It is asked in the
// answer to its request instead (callRun.decide, a round). It decides in
// its retry, whose call carries the decision (CallOptions.Approval). The
// approver is not asked then.
//
// A call made by run_code's code, in a round, is deferred instead. The
// run stops, and the round asks about it (askCode).
//
// A client that declared no elicitation cannot be asked. Then the
// caller's own Approver decides, if there is one. Else the call is
// denied saying so.
func (g *Gateway) approve(ctx context.Context, req conduit.ApprovalRequest) conduit.Approval {
	if g.console != nil && g.console.o.Approvals {
		return g.console.hold(ctx, req)
	}
	if cr := runFrom(ctx); cr != nil {
		if nested(ctx) {
			if a, ok := cr.deferNested(req); ok {
				return a
			}
			return g.cannotAsk(ctx, req)
		}
		if a, ok := cr.decide(req); ok {
			return a
		}
		return g.cannotAsk(ctx, req)
	}
	s := sessionFrom(ctx)
	var ss *mcp.ServerSession
	if s != nil {
		ss = s.serverSession()
	}
	if ss == nil || s.clientCaps().Elicitation == nil {
		return g.cannotAsk(ctx, req)
	}
	ask := &mcp.ElicitParams{Message: approvalMessage(req.Call), RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`)}
	allowed := allowedFor(ctx)
	if allowed != nil {
		// A call of run_code's code: the person may allow its tool for
		// the rest of the run. The run's calls in parallel ask one at a
		// time, so a tool allowed by the first answer is not asked again.
		allowed.asking.Lock()
		defer allowed.asking.Unlock()
		if allowed.has(req.Call.Exposed) {
			return conduit.Approve()
		}
		ask.RequestedSchema = forRunSchema(req.Call.Exposed)
	}
	actx, cancel := context.WithTimeout(ctx, g.approveWait)
	defer cancel()
	res, err := ss.Elicit(actx, ask)
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded):
		return conduit.Reject(fmt.Sprintf("no answer to the approval request within %v", g.approveWait))
	case err != nil:
		return conduit.Reject("the approval request failed: " + err.Error())
	case res.Action == "accept":
		if v, _ := res.Content[forRunInput].(bool); v && allowed != nil {
			allowed.add(req.Call.Exposed)
		}
		return conduit.Approve()
	case res.Action == "decline":
		return conduit.Reject("the user declined it")
	}
	return conduit.Reject("the user canceled the approval request")
}

// cannotAsk decides a call whose client cannot be asked. The caller's own
// Approver decides, or a denial says why.
func (g *Gateway) cannotAsk(ctx context.Context, req conduit.ApprovalRequest) conduit.Approval {
	if g.approver != nil {
		return g.approver(ctx, req)
	}
	return conduit.Reject("it needs approval, and the client cannot be asked: it did not declare the elicitation capability")
}

// approvalMessage names what a call would do. It names the tool (or
// prompt or resource) and its arguments.
func approvalMessage(c *conduit.Call) string {
	switch c.Method {
	case "prompts/get":
		return fmt.Sprintf("Allow getting the prompt %s of %s with arguments %s?", c.Exposed, c.Server, shownArgs(c.Args))
	case "resources/read":
		return fmt.Sprintf("Allow reading the resource %s of %s?", c.Exposed, c.Server)
	}
	return fmt.Sprintf("Allow calling the tool %s of %s with arguments %s?", c.Exposed, c.Server, shownArgs(c.Args))
}

func shownArgs(args map[string]any) string {
	if args == nil {
		args = map[string]any{}
	}
	data, err := json.Marshal(args)
	if err != nil {
		return "(arguments that cannot be shown)"
	}
	if len(data) <= maxShownArgs {
		return string(data)
	}
	cut := maxShownArgs
	for cut > 0 && !utf8.RuneStart(data[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes in all)", data[:cut], len(data))
}
