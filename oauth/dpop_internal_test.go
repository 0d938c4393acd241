package oauth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A proof embeds the public key only, and binds what RFC 9449 §4.2 says.
func TestDPoPProof(t *testing.T) {
	d, err := newDPoPKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://MCP.example/mcp?x=1#f")
	d.nonces[nonceOrigin(u)] = "n-1"
	p, err := d.proof(http.MethodPost, u, "at-1")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(p, ".")
	head, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var h struct {
		Typ string         `json:"typ"`
		Alg string         `json:"alg"`
		JWK map[string]any `json:"jwk"`
	}
	if err := json.Unmarshal(head, &h); err != nil {
		t.Fatal(err)
	}
	if h.Typ != "dpop+jwt" || h.Alg != "ES256" || h.JWK["kty"] != "EC" || h.JWK["d"] != nil {
		t.Fatalf("header %s", head)
	}
	var c jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(p, &c); err != nil {
		t.Fatal(err)
	}
	if c["htm"] != "POST" || c["htu"] != "https://MCP.example/mcp" || c["nonce"] != "n-1" || c["ath"] == nil || c["jti"] == "" {
		t.Fatalf("claims %v", c)
	}
	if q, _ := d.proof(http.MethodPost, u, "at-1"); q == p {
		t.Fatal("two proofs are the same")
	}
}

// FuzzDPoPAnswer feeds arbitrary answers to what reads them: a nonce is
// kept only when it has the syntax of one, and the body the caller reads
// is the body the server sent, whether or not it asks for a nonce.
func FuzzDPoPAnswer(f *testing.F) {
	f.Add(400, "nonce-1", []byte(`{"error":"use_dpop_nonce"}`), "")
	f.Add(401, "n", []byte(``), `DPoP error="use_dpop_nonce", resource_metadata="https://x"`)
	f.Add(400, "bad nonce", []byte(`{"error":`), "")
	// A body over maxErrorBody is TestDPoPLongErrorBody's: one as a seed
	// makes the fuzzer spend its time minimizing.
	f.Add(400, strings.Repeat("n", 2000), []byte(`{"error":"use_dpop_nonce","x":"`+strings.Repeat("x", 500)+`"}`), "Bearer")
	f.Add(200, "\"q\"", []byte(`null`), "DPoP ,,,")
	u, _ := url.Parse("https://as.example/token")
	d, err := newDPoPKey(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, nonce string, body []byte, challenge string) {
		clear(d.nonces)
		resp := &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
		resp.Header.Set("DPoP-Nonce", nonce)
		resp.Header.Set("WWW-Authenticate", challenge)
		if d.noteNonce(u, resp) {
			n := d.nonces[nonceOrigin(u)]
			if n != nonce || len(n) > maxNonce || strings.ContainsAny(n, " \"\\\t\r\n") {
				t.Fatalf("kept nonce %q from %q", n, nonce)
			}
		}
		for _, resource := range []bool{false, true} {
			resp.Body = io.NopCloser(bytes.NewReader(body))
			if _, err := nonceRefusal(resp, resource); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("the body read after the check differs (%d bytes of %d, %v)", len(got), len(body), err)
			}
		}
	})
}

// An error body longer than what is read to tell a nonce refusal comes
// back whole.
func TestDPoPLongErrorBody(t *testing.T) {
	body := append([]byte(`{"error":"use_dpop_nonce",`), bytes.Repeat([]byte("x"), 2*maxErrorBody)...)
	resp := &http.Response{StatusCode: http.StatusBadRequest, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}
	if retry, err := nonceRefusal(resp, false); retry || err != nil {
		t.Fatalf("a body cut short was read as a nonce refusal (%v, %v)", retry, err)
	}
	if got, err := io.ReadAll(resp.Body); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes of %d back (%v)", len(got), len(body), err)
	}
}

// FuzzAssertion feeds arbitrary files to the jwt_bearer grant's reader:
// what it accepts is one compact JWT, and its errors never quote the file.
func FuzzAssertion(f *testing.F) {
	tok, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{ExpiresAt: jwt.NewNumericDate(time.Unix(2e9, 0))}).SignedString([]byte("k"))
	f.Add([]byte(tok + "\n"))
	f.Add([]byte("a.b.c"))
	f.Add([]byte("eyJhbGciOiJub25lIn0.eyJleHAiOiJ4In0."))
	f.Add([]byte(" \n"))
	f.Add(bytes.Repeat([]byte("e"), maxAssertion+2))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, _, err := parseAssertion(data)
		if err != nil {
			if s := strings.TrimSpace(string(data)); len(s) >= 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("the error quotes the assertion: %v", err)
			}
			return
		}
		if strings.Count(a, ".") != 2 || a != strings.TrimSpace(a) || len(a) > maxAssertion {
			t.Fatalf("accepted %q", a)
		}
	})
}

// FuzzDPoPKey feeds arbitrary stored keys to the token store's reader: a
// key it accepts signs, and is stored back as the same key.
func FuzzDPoPKey(f *testing.F) {
	d, _ := newDPoPKey(nil)
	k, _ := d.marshal()
	f.Add(k)
	f.Add(`{"kty":"EC","crv":"P-384","x":"AA","y":"AA","d":"AA"}`)
	f.Add(`{"kty":"RSA"}`)
	f.Add(`null`)
	u, _ := url.Parse("https://mcp.example/mcp")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDPoPKey(s)
		if err != nil {
			if len(s) >= 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("the error quotes the key: %v", err)
			}
			return
		}
		if _, err := d.proof(http.MethodGet, u, ""); err != nil {
			t.Fatalf("an accepted key does not sign: %v", err)
		}
		m, err := d.marshal()
		if err != nil {
			t.Fatal(err)
		}
		e, err := parseDPoPKey(m)
		if err != nil || !e.key.Equal(d.key) {
			t.Fatalf("the key stored back is another: %v", err)
		}
	})
}
