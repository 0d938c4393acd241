package taskpoll

import (
	"encoding/json"
	"testing"
)

// FuzzTaskRewrite: whatever a server answers a tools/call with, taking a
// task off the wire never panics, and what it hands the SDK is JSON. That
// holds for a whole message (Streamable HTTP) and for a result alone
// (stdio, where the SDK has read the message).
func FuzzTaskRewrite(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t","status":"working","pollIntervalMs":5}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"complete"}}`))
	f.Add([]byte(`{"result":"task"}`))
	f.Add([]byte(`{"resultType":"task","taskId":"t","status":"working"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := New(nil)
		out := p.rewrite(data, &Route{})
		if string(out) != string(data) && !json.Valid(out) {
			t.Fatalf("rewrote %q to %q", data, out)
		}
		res, ok := p.TaskResult(data, &Route{})
		if ok && (!json.Valid(res) || len(p.routes) == 0) {
			t.Fatalf("took a task from %q as %q, routes %d", data, res, len(p.routes))
		}
	})
}
