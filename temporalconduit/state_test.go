// Fuzz targets of what comes back from outside the workflow's code: a
// State given to ResumeConversation (a workflow's input), and a claim's
// record read from the shared store.
package temporalconduit

import (
	"encoding/json"
	"reflect"
	"testing"
)

func FuzzState(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":"x","offer":{"provider":"anthropic","tools":[{"server":"s","tool":"t","exposed":"t","digest":"sha256:` +
		`0000000000000000000000000000000000000000000000000000000000000000"}]},"taint":["s"],"turns":2}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"id":"x","offer":{"provider":"nope"},"turns":-1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st State
		if json.Unmarshal(data, &st) != nil {
			return
		}
		if st.check() != nil {
			return
		}
		// A state that passes is one a Conversation can carry on: its
		// provider parses and its tools are complete, distinct, digested.
		if _, err := st.Offer.provider(); err != nil {
			t.Fatalf("checked, yet its provider: %v", err)
		}
		again, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var st2 State
		if err := json.Unmarshal(again, &st2); err != nil || st2.check() != nil || !reflect.DeepEqual(st.clone(), st2.clone()) {
			t.Fatalf("does not round-trip: %s", again)
		}
	})
}

func FuzzRecord(f *testing.F) {
	f.Add([]byte(`{"answer":{"type":"tool_result"},"reached":true}`))
	f.Add([]byte(`{"pending":{"arguments":{}}}`))
	f.Add([]byte(`{"answer":{},"pending":{"arguments":{}}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"result":{"content":[{"type":"text","text":"hi"}]},"reached":true}`))
	f.Add([]byte(`{"err":{"kind":"denied","message":"no"}}`))
	f.Add([]byte(`{"err":{"kind":"nope","message":"no"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, ok := readRecord(data)
		if ok && out.kinds() != 1 {
			t.Fatalf("read %s as %+v: want one of an answer, a result, an error or a deferral", data, out)
		}
	})
}
