package once

import (
	"bytes"
	"errors"
	"testing"
)

// A record read back is what was recorded, and nothing read from a store
// makes decode panic or call a record a failure and a result at once.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"answer":{}}`))
	f.Add([]byte("conduit-once/1 ok\n{}"))
	f.Add([]byte("conduit-once/1 failed\nno"))
	f.Add([]byte("conduit-once/2 ok\n"))
	f.Add([]byte("conduit-once/"))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := decode(data)
		switch out.State {
		case Recorded:
			if (out.Result == nil) == (out.Err == nil) {
				t.Fatalf("decode(%q) = %+v: want a result or a failure", data, out)
			}
		case Unknown:
			if out.Err == nil || out.Result != nil {
				t.Fatalf("decode(%q) = %+v: want why, no result", data, out)
			}
		default:
			t.Fatalf("decode(%q) = %+v", data, out)
		}
		if got := decode(encode(data, nil)); got.State != Recorded || !bytes.Equal(got.Result, data) || got.Result == nil {
			t.Fatalf("result %q read back as %+v", data, got)
		}
		if got := decode(encode(nil, errors.New(string(data)))); got.State != Recorded || got.Err == nil || got.Err.Error() != string(data) {
			t.Fatalf("failure %q read back as %+v", data, got)
		}
	})
}
