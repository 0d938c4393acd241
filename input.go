package conduit

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/conduitmcp/conduit/internal/mrtr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input: a server's questions during a request (elicitation, sampling,
// roots). Its caller answers them across requests rather than during the
// call. One type serves both uses. One is a deferred call taken up again.
// The other is a gateway that passes the questions on to its own clients.

// Input is a caller's own part in what a server asks of its client during
// a request (tools/call, prompts/get, resources/read). It is answered
// across requests, rather than during the call through [Handlers]. It
// serves two uses, both continuing the server's exchange later:
//
//   - A call deferred for input. A handler deferred what the server asked
//     ([DeferInput]). The call failed with a [Deferral] whose Input holds
//     the Requests, the Responses given already and the RequestState.
//     Once the Responses are complete ([Input.Missing]), pass that Input
//     as [CallOptions.Input]. That takes the call up again.
//     adapters.Conversation's Resume does so, in any process.
//   - A caller that answers by itself. Examples are a gateway whose own
//     clients answer, or an application that keeps the question for a
//     person. Return ends the request with the server's input-required
//     result. The retry carries the answers (Responses) and the server's
//     RequestState.
//
// A server of protocol 2026-07-28 asks by a multi-round-trip result. That
// ends its request. The question waits as long as need be. Then the
// request is sent again with the answers and RequestState, as the
// protocol means it to. conduit passes them on as they are. The server
// checks them, as it checks arguments.
//
// A server of an earlier protocol asks by a JSON-RPC request in the middle
// of its call. That cannot wait. A deferral answers it with an error and
// cancels the call (Resend). Taken up, the call is sent again, from the
// start. The server may ask the same question (an equal request). It is
// then given the recorded answer without asking anyone. Such a server sees
// the call twice, the first one cancelled while it waited. Handlers answer
// its other requests, whatever Input says.
type Input struct {
	// Requests are what the server asked, by the keys of its input
	// requests. Under Resend, it is its one request. A deferral fills them
	// in. A retry does not need them.
	Requests mcp.InputRequestMap `json:"requests"`
	// Responses are the answers, by the same keys. With RequestState, they
	// make the request the retry of the one whose server asked. Under
	// Resend, they are the recorded answer.
	Responses mcp.InputResponseMap `json:"responses,omitempty"`
	// RequestState is the server's request state, sent back with the
	// answers (protocol 2026-07-28).
	RequestState string `json:"requestState,omitempty"`
	// Resend reports that the call was cancelled and is sent again. The
	// recorded answer is then given to the same question. This is for
	// earlier protocols.
	Resend bool `json:"resend,omitempty"`
	// Return ends a request whose server asks for input (protocol
	// 2026-07-28). It returns the server's result as it sent it. Its
	// NeedsInput reports true. Its InputRequests and RequestState are the
	// server's. After-hooks do not run on it.
	// They run on the result of the round that completes. Without Return,
	// conduit answers through Handlers and asks again.
	Return bool `json:"return,omitempty"`
	// Task, for a call its server runs as a task (SEP-2663), is the task
	// that asked. Taken up, the call sends no tools/call again. It sends
	// the Responses to the task (tasks/update), and polls it to its end.
	Task *InputTask `json:"task,omitempty"`
}

// InputTask is the task of a deferred call, as [Input] keeps it.
type InputTask struct {
	// ID is the task's id at its server.
	ID string `json:"id"`
	// Meta is the _meta of the request that made it. It holds the protocol
	// version and capabilities its server was told. It is sent again with
	// each request about the task.
	Meta json.RawMessage `json:"meta,omitempty"`
	// PollInterval is the wait before the next tasks/get, as the server
	// last asked (within conduit's bounds). A detached call's caller waits
	// it (CallOptions.DetachTask).
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// Cancel, taken up, cancels the task (tasks/cancel) rather than follow
	// it. The call then fails. A durable caller whose own wait was
	// cancelled sends it so.
	Cancel bool `json:"cancel,omitempty"`
}

// resendKey is the key of the one request of an Input that Resend
// marks. Callers answer each request by the key it came with.
const resendKey = "request"

// Missing returns the keys of the requests without an answer, sorted.
func (in *Input) Missing() []string {
	var out []string
	for k := range in.Requests {
		if _, ok := in.Responses[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// WithResponses returns a copy of in with answers added to its
// Responses. An answer given again replaces the one given before. in is
// not changed. It is how a decision's answers join what was answered
// already, before the call is taken up (CallOptions.Input).
func (in *Input) WithResponses(answers mcp.InputResponseMap) *Input {
	c := *in
	c.Requests = maps.Clone(in.Requests)
	c.Responses = maps.Clone(in.Responses)
	if c.Responses == nil {
		c.Responses = mcp.InputResponseMap{}
	}
	maps.Copy(c.Responses, answers)
	return &c
}

// retry reports whether in makes the request the retry of one whose
// server asked for input by a multi-round-trip result.
func (in *Input) retry() bool {
	return in != nil && !in.Resend && (in.Responses != nil || in.RequestState != "")
}

// answerTo returns the recorded answer to ask. That is the answer to the
// request of in that asks the same, if there is one.
func (in *Input) answerTo(ask mcp.InputRequest) mcp.InputResponse {
	if in == nil || ask == nil {
		return nil
	}
	want, err := question(ask)
	if err != nil {
		return nil
	}
	for k, r := range in.Requests {
		if q, err := question(r); err == nil && bytes.Equal(q, want) {
			if a, ok := in.Responses[k]; ok {
				return a
			}
		}
	}
	return nil
}

// question is what ask asks, as JSON. It leaves out the _meta a server may
// fill in anew each time it asks.
func question(ask mcp.InputRequest) ([]byte, error) {
	switch p := ask.(type) {
	case *mcp.ElicitParams:
		c := *p
		c.Meta = nil
		ask = &c
	case *mcp.ListRootsParams:
		c := *p
		c.Meta = nil
		ask = &c
	case *mcp.CreateMessageParams:
		// A request read back from JSON is in its with-tools form.
		c := mrtr.WithTools(p)
		c.Meta = nil
		ask = c
	case *mcp.CreateMessageWithToolsParams:
		c := *p
		c.Meta = nil
		ask = &c
	}
	return json.Marshal(mcp.InputRequestMap{"": ask})
}
