package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzUsesNewProtocol: the first read of a request's body, which tells a
// request of 2026-07-28 and the conversation its _meta names (and so the
// taint its view is chosen with), on arbitrary bodies and headers: no
// panic; the body the SDK then reads is the body sent, byte for byte; and
// what it says agrees with a plain decoding of the message.
func FuzzUsesNewProtocol(f *testing.F) {
	f.Add("", "", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.github.conduitmcp/conversation":"c1"}}}`))
	f.Add("2026-07-28", "", []byte(`{"params":{"_meta":{"io.github.conduitmcp/conversation":7}}}`))
	f.Add("2025-11-25", "", []byte(`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add("", "sid", []byte(`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add("", "", []byte(`[{"params":{}}]`))
	f.Add("", "", []byte(`{"params":null}`))
	f.Fuzz(func(t *testing.T, version, session string, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		if version != "" {
			r.Header.Set("Mcp-Protocol-Version", version)
		}
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		// Header values the net/http client would refuse are not requests.
		version, session = r.Header.Get("Mcp-Protocol-Version"), r.Header.Get("Mcp-Session-Id")
		isNew, p := usesNewProtocol(r)
		meta := p.meta
		rest, err := io.ReadAll(r.Body)
		if err != nil || !bytes.Equal(rest, body) {
			t.Fatalf("the body read after is %q (%v), sent %q", rest, err, body)
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		decoded := json.Unmarshal(body, &msg) == nil
		said, _ := msg.Params.Meta["io.modelcontextprotocol/protocolVersion"].(string)
		var want bool
		switch {
		case version != "":
			want = version >= newProtocol
		case session != "":
			want = false
		default:
			want = decoded && said >= newProtocol
		}
		if isNew != want {
			t.Fatalf("new protocol = %v, want %v (header %q, session %q, _meta says %q)", isNew, want, version, session, said)
		}
		if !isNew && meta != nil {
			t.Fatalf("a request of an older protocol had its _meta read: %v", meta)
		}
		if isNew && decoded && (len(meta) != len(msg.Params.Meta) || p.method != msg.Method) {
			t.Fatalf("method %q, _meta = %v, want %q, %v", p.method, meta, msg.Method, msg.Params.Meta)
		}
		if c, err := conversationOf(meta); err == nil && len(c) > maxConversation {
			t.Fatalf("a conversation of %d bytes was accepted", len(c))
		}
	})
}
