package redisstore

import (
	"bytes"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/store"
)

// FuzzParseClaim: a claim record read back from Redis (which anyone with
// access to it can alter) never panics the decoder, is never taken for a
// claim this process won, and the records this package writes decode to
// what was written.
func FuzzParseClaim(f *testing.F) {
	for _, seed := range []string{"", "p", "pTOKEN", "dTOKEN:", "dTOKEN:result", "d:x", "dT:a:b", "x", "p:x", "d\x00:\xff"} {
		f.Add(seed, []byte("result"))
	}
	f.Fuzz(func(t *testing.T, v string, result []byte) {
		c, err := parseClaim(v)
		if err == nil {
			switch c.State {
			case store.Pending:
				if c.Token == "" || strings.Contains(c.Token, ":") || c.Result != nil {
					t.Fatalf("parseClaim(%q) = %+v", v, c)
				}
			case store.Completed:
				if c.Result == nil || c.Token != "" {
					t.Fatalf("parseClaim(%q) = %+v", v, c)
				}
			default:
				t.Fatalf("parseClaim(%q) = %+v, a state it never decodes", v, c)
			}
		}
		token := "TOKEN"
		done, err := parseClaim("d" + token + ":" + string(result))
		if err != nil || done.State != store.Completed || !bytes.Equal(done.Result, result) {
			t.Fatalf("a written result %q decodes to %+v %v", result, done, err)
		}
	})
}
