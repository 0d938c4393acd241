package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestLineBound: lines within the limit pass as they are, in any pieces;
// a longer one is replaced by the error response for its id, wherever the
// id is, or dropped when it is not a response.
func TestLineBound(t *testing.T) {
	big := strings.Repeat("y", 300)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":"short"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"text":"` + big + `"}}`,
		`{"result":{"text":"` + big + `","nested":{"id":9,"x":[{"id":8}]}},"jsonrpc":"2.0","id":"abc\"d"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + big + `"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"x":"` + big + `"}}`,
		`{"jsonrpc":"2.0","id":{"bad":1},"result":"` + big + `"}`,
		`[{"jsonrpc":"2.0","id":6,"result":"` + big + `"}]`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"small"}}`,
		``,
	}, "\n")
	marker := json.RawMessage(`"conduit: result over the limit test"`)
	over := &Oversize{Server: "s", Limit: 100, Marker: marker, Logger: discardLogger()}
	for _, piece := range []int{1, 7, 64, 1 << 20} {
		b := &lineBound{reader: reader{src: &pieces{data: []byte(in), n: piece}}, limit: 200, reject: over.reject}
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("piece %d: %d lines: %q", piece, len(lines), out)
		}
		if lines[0] != `{"jsonrpc":"2.0","id":1,"result":{"a":"short"}}` || lines[3] != `{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"small"}}` {
			t.Fatalf("piece %d: lines within the limit changed: %q", piece, lines)
		}
		for i, want := range []string{"2", `abc"d`} {
			msg, err := jsonrpc.DecodeMessage([]byte(lines[i+1]))
			if err != nil {
				t.Fatal(err)
			}
			resp := msg.(*jsonrpc.Response)
			var we *jsonrpc.Error
			if fmt.Sprint(resp.ID.Raw()) != want || !errors.As(resp.Error, &we) || we.Code != CodeResultTooLarge || !bytes.Equal(we.Data, marker) ||
				we.Message != "is larger than the limit of 100 bytes" {
				t.Fatalf("piece %d: line %q", piece, lines[i+1])
			}
		}
	}
}

// pieces reads data n bytes at a time.
type pieces struct {
	data []byte
	n    int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), p.n)], p.data)
	p.data = p.data[n:]
	return n, nil
}

// TestSSEBound: events within the limit pass as they are; a longer one is
// replaced by an event with its id carrying the error response for the id
// in its data.
func TestSSEBound(t *testing.T) {
	big := strings.Repeat("z", 300)
	in := "id: e1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n" +
		"event: message\ndata: {\"result\":{\"t\":\"" + big + "\"},\r\ndata: \"jsonrpc\":\"2.0\",\"id\":7}\r\nid: e2\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":\"" + big + "\"}\n\n" +
		": a comment\nid: e4\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n"
	over := &Oversize{Server: "s", Limit: 100, Marker: json.RawMessage(`"conduit: result over the limit test"`), Logger: discardLogger()}
	for _, piece := range []int{1, 5, 64, 1 << 20} {
		b := newSSEBound(io.NopCloser(&pieces{data: []byte(in), n: piece}), 200, over)
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		events := strings.Split(string(out), "\n\n")
		if len(events) != 4 || events[3] != "" {
			t.Fatalf("piece %d: %q", piece, out)
		}
		if events[0] != "id: e1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}" ||
			events[2] != ": a comment\nid: e4\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}" {
			t.Fatalf("piece %d: events within the limit changed: %q", piece, out)
		}
		if !strings.HasPrefix(events[1], "id: e2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32099,") {
			t.Fatalf("piece %d: stand-in %q", piece, events[1])
		}
	}
}

// FuzzLineBound: whatever a server writes, the bound never panics, the
// SDK's reader reads what it passes without error (nothing ends the
// session), the messages of every line within the limit pass in order
// (judgeLine), and every other line it passes is an error response
// standing in for a response.
func FuzzLineBound(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":"` + strings.Repeat("b", 80) + `"}}` + "\n",
		`{"result":"\\\"` + strings.Repeat("c", 80) + `","id":"x"}` + "\n{}\n",
		`[{"id":1,"result":[` + strings.Repeat("[", 70) + "\n",
		`{"id":` + strings.Repeat("9", 300) + `,"result":1}` + "\n",
		"Debugger listening\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n[1]\n",
		`{"jsonrpc":"2.0","id":2,"result":` + strings.Repeat("[", 1001) + "\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	over := &Oversize{Server: "s", Limit: 64, Marker: json.RawMessage(`"conduit: result over the limit test"`), Logger: discardLogger()}
	f.Fuzz(func(t *testing.T, data []byte, piece uint8) {
		b := &lineBound{reader: reader{src: &pieces{data: data, n: int(piece) + 1}}, limit: 64, reject: over.reject}
		out, err := io.ReadAll(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sdkRead(t, out); err != nil {
			t.Fatalf("the SDK fails on %q from %q: %v", out, data, err)
		}
		var want []string
		for _, l := range strings.Split(string(data), "\n") {
			if len(l) <= 64 {
				msgs, _ := judgeLine([]byte(l))
				for _, m := range msgs {
					want = append(want, string(m))
				}
			}
		}
		i := 0
		for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if l == "" {
				continue
			}
			if i < len(want) && l == want[i] {
				i++
				continue
			}
			msg, err := jsonrpc.DecodeMessage([]byte(l))
			if r, ok := msg.(*jsonrpc.Response); err != nil || !ok || r.Error == nil {
				t.Fatalf("passed %q", l)
			}
		}
		if i != len(want) {
			t.Fatalf("messages within the limit lost: %q from %q", out, data)
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
