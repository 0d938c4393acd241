package mrtr

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// asking is a server that asks for a name until the retry carries it.
func asking(sent *[]*mcp.CallToolParams) mcp.MethodHandler {
	return func(_ context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		p := req.GetParams().(*mcp.CallToolParams)
		*sent = append(*sent, p)
		if _, ok := p.InputResponses["name"]; ok && p.RequestState == "asked" {
			return &mcp.CallToolResult{}, nil
		}
		return &mcp.CallToolResult{RequestState: "asked", InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "name?"}}}, nil
	}
}

func call() mcp.Request {
	return &mcp.ClientRequest[*mcp.CallToolParams]{Session: (*mcp.ClientSession)(nil), Params: &mcp.CallToolParams{Name: "t"}}
}

// The loop answers through Receive and asks again, leaving the caller's
// params untouched; a deferred question keeps the server's state.
func TestRun(t *testing.T) {
	var sent []*mcp.CallToolParams
	r := &Rounds{
		Receive: func(context.Context, string, mcp.Request) (mcp.Result, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		Deferred: func(error) (string, bool) { return "", false },
	}
	req := call()
	if _, err := r.Run(context.Background(), "tools/call", req, asking(&sent), Start{}); err != nil || len(sent) != 2 {
		t.Fatalf("Run = %v after %d rounds, want a result after 2", err, len(sent))
	}
	if req.GetParams().(*mcp.CallToolParams).InputResponses != nil {
		t.Error("the caller's params were modified")
	}

	errLater := errors.New("later")
	r.Receive = func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, errLater }
	r.Deferred = func(err error) (string, bool) { return "ask Ada", errors.Is(err, errLater) }
	_, err := r.Run(context.Background(), "tools/call", call(), asking(&sent), Start{})
	var d *Deferred
	if !errors.As(err, &d) || d.State != "asked" || d.Reason != "ask Ada" || d.Requests["name"] == nil {
		t.Fatalf("deferred: %v (%+v)", err, d)
	}

	// Started as a retry with the answer, the server is asked once.
	sent = nil
	st := Start{Retry: true, Responses: mcp.InputResponseMap{"name": &mcp.ElicitResult{Action: "accept"}}, State: "asked"}
	if _, err := r.Run(context.Background(), "tools/call", call(), asking(&sent), st); err != nil || len(sent) != 1 {
		t.Fatalf("retry: %v after %d rounds", err, len(sent))
	}
}

// A server that sheds load, or keeps asking, ends the request with
// ErrNotGiven rather than a loop without end.
func TestRunLimits(t *testing.T) {
	busy := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}}, nil
	}
	r := &Rounds{}
	_, err := r.Run(context.Background(), "tools/call", call(), busy, Start{})
	var e *Error
	if !errors.Is(err, ErrNotGiven) || !errors.As(err, &e) || e.What != "" {
		t.Fatalf("busy: %v", err)
	}
	var sent []*mcp.CallToolParams
	r = &Rounds{Receive: func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}, Deferred: func(error) (string, bool) { return "", false }}
	never := func(ctx context.Context, m string, req mcp.Request) (mcp.Result, error) {
		asking(&sent)(ctx, m, req)
		return &mcp.CallToolResult{RequestState: "again", InputRequests: mcp.InputRequestMap{"x": &mcp.ElicitParams{}}}, nil
	}
	if _, err := r.Run(context.Background(), "tools/call", call(), never, Start{}); !errors.Is(err, ErrNotGiven) || len(sent) != maxInputRounds {
		t.Fatalf("kept asking: %v after %d rounds", err, len(sent))
	}
	// Roots are refused unless allowed.
	asksRoots := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"r": &mcp.ListRootsParams{}}}, nil
	}
	if _, err := r.Run(context.Background(), "tools/call", call(), asksRoots, Start{}); !errors.As(err, &e) || e.What != "roots" {
		t.Fatalf("roots: %v", err)
	}
}
