package oauth

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The redirect listener answers once: a second redirect, even one that
// carries the right state and a code, is answered 410 Gone and never
// reaches the authorization. (Authorize closes the listener right after
// the first answer, so over the network the second one is mostly refused;
// the handler is tested here for the moment in between.)
func TestLoopbackSecondRedirectIsGone(t *testing.T) {
	l := &Loopback{}
	done := make(chan outcome, 2)
	h := l.redirectHandler("s", done)

	first := httptest.NewRecorder()
	h.ServeHTTP(first, httptest.NewRequest(http.MethodGet, "/cb?code=one&state=s", nil))
	if first.Code != http.StatusOK {
		t.Fatalf("first redirect answered %d", first.Code)
	}
	second := httptest.NewRecorder()
	h.ServeHTTP(second, httptest.NewRequest(http.MethodGet, "/cb?code=two&state=s", nil))
	if second.Code != http.StatusGone {
		t.Fatalf("second redirect answered %d, want 410", second.Code)
	}
	if n := len(done); n != 1 {
		t.Fatalf("%d outcomes, want the first redirect's only", n)
	}
	if o := <-done; o.err != nil || o.res.Code != "one" {
		t.Fatalf("outcome %+v, want the first code", o)
	}
}
