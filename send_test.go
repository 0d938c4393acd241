package conduit

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSDKRejectionCode pins codeRejected to the SDK: a Streamable HTTP
// request that the server refuses with a 500 fails with the SDK's internal
// jsonrpc2.ErrRejected, which wireErrors finds by its code. If the SDK
// changes the code, this test fails instead of calls being misclassified.
func TestSDKRejectionCode(t *testing.T) {
	srv := newTestServer(t, "s").echoTools("t")
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			http.Error(w, "refused", http.StatusInternalServerError)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close) // after the hub's Close, which ends its streams
	ctx := context.Background()
	cl := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	sess, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	_, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "t"})
	if err == nil {
		t.Fatal("the refused call succeeded")
	}
	rpcErr, rejected := wireErrors(err)
	if !rejected || rpcErr != nil {
		t.Fatalf("wireErrors(%v) = %v, rejected %v: the SDK's rejection code is no longer %d", err, rpcErr, rejected, codeRejected)
	}
	// And the pipeline answers such a call as unavailable, to try again.
	h := newHub(t, []Server{{ID: "s", URL: hs.URL}}, nil)
	_, err = h.CallTool(ctx, "s__t", nil, nil)
	if e := wantKind(t, err, ErrUnavailable); e.Message != "The request to the server of s__t failed; it may succeed if tried again." {
		t.Fatalf("message %q", e.Message)
	}
}
