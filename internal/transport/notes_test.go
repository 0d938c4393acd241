package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptConn is a connection that reads what a test gives it and keeps
// what is written to it.
type scriptConn struct {
	mcp.Connection
	in      []jsonrpc.Message
	written []jsonrpc.Message
}

func (c *scriptConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.in) == 0 {
		return nil, io.EOF
	}
	m := c.in[0]
	c.in = c.in[1:]
	return m, nil
}

func (c *scriptConn) Write(_ context.Context, m jsonrpc.Message) error {
	c.written = append(c.written, m)
	return nil
}

// TestResultRefusedBeforeDecoding: on a connection conduit wraps, a
// tools/call result whose JSON text is over MaxResultBytes is replaced by
// the error that stands in for it before the SDK decodes it; other
// responses, and results within the limit, pass as they are; a canceled
// call's id is forgotten.
func TestResultRefusedBeforeDecoding(t *testing.T) {
	id := func(n float64) jsonrpc.ID { v, _ := jsonrpc.MakeID(n); return v }
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 100) + `"}]}`)
	small := json.RawMessage(`{"content":[]}`)
	sc := &scriptConn{in: []jsonrpc.Message{
		&jsonrpc.Response{ID: id(1), Result: big},   // tools/call, too large
		&jsonrpc.Response{ID: id(2), Result: small}, // tools/call, within
		&jsonrpc.Response{ID: id(3), Result: big},   // tools/list
		&jsonrpc.Response{ID: id(4), Result: big},   // a canceled tools/call
	}}
	marker := json.RawMessage(`"marker"`)
	c := &Conn{Connection: sc, h: Hooks{ResultBytes: 100, Marker: marker}}
	ctx := context.Background()
	for i, m := range []string{"tools/call", "tools/call", "tools/list", "tools/call"} {
		if err := c.Write(ctx, &jsonrpc.Request{ID: id(float64(i + 1)), Method: m}); err != nil {
			t.Fatal(err)
		}
	}
	c.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":4}`)})
	if len(sc.written) != 5 {
		t.Fatalf("%d messages written, want 5", len(sc.written))
	}
	for i := range 4 {
		m, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resp := m.(*jsonrpc.Response)
		var we *jsonrpc.Error
		refused := errors.As(resp.Error, &we) && we.Code == CodeResultTooLarge && bytes.Equal(we.Data, marker)
		if refused != (i == 0) {
			t.Errorf("response %d: refused %v (%v)", i+1, refused, resp.Error)
		}
		if !refused && resp.Result == nil {
			t.Errorf("response %d lost its result", i+1)
		}
	}
	if len(c.calls) != 0 {
		t.Errorf("ids kept: %v", c.calls)
	}
}

// TestPlainConnTypes: the SDK's client connections that conduit wraps are
// still the types PlainConn knows, and Streamable HTTP's is not wrapped.
func TestPlainConnTypes(t *testing.T) {
	ctx := context.Background()
	mem, _ := mcp.NewInMemoryTransports()
	r, w := io.Pipe()
	defer r.Close()
	hs := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "sse", Version: "1"}, nil)
	}, nil))
	defer hs.Close()
	for _, tr := range []mcp.Transport{mem, &mcp.IOTransport{Reader: r, Writer: w}, &mcp.SSEClientTransport{Endpoint: hs.URL}} {
		c, err := tr.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !PlainConn(c) {
			t.Errorf("%T is not a plain connection", c)
		}
		c.Close()
	}
	c, err := (&mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:1/"}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if PlainConn(c) {
		t.Errorf("%T taken for a plain connection", c)
	}
}

// stalledConn takes one write, then stalls every other, as a server that
// stopped reading does.
type stalledConn struct {
	mcp.Connection
	writes atomic.Int32
	stop   chan struct{}
}

func (c *stalledConn) Write(ctx context.Context, _ jsonrpc.Message) error {
	if c.writes.Add(1) == 1 {
		return nil
	}
	<-c.stop
	return io.ErrClosedPipe
}

// TestCallCanceledOnStalledServer: a call whose context ends returns
// within the cancellation notice's bound, though the server reads nothing
// more and the notice cannot be written.
func TestCallCanceledOnStalledServer(t *testing.T) {
	sc := &stalledConn{stop: make(chan struct{})}
	defer close(sc.stop)
	c := &Conn{Connection: sc}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	id, _ := jsonrpc.MakeID(float64(1))
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, &jsonrpc.Request{ID: id, Method: "tasks/get"})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(4 * cancelNoticeTimeout):
		t.Fatal("the call did not return: the cancellation notice's write held it")
	}
}
