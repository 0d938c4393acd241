package gateway

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// fuzzIssuer is the issuer and resource of the fuzzed tokens.
const (
	fuzzIssuer   = "https://issuer.example"
	fuzzResource = "https://gateway.example/mcp"
)

// fuzzVerifier is a verifier whose keys are key's public one (kid k1),
// fetched just now, so that it fetches nothing.
func fuzzVerifier(t testing.TB, key *ecdsa.PrivateKey) *verifier {
	v, err := newVerifier(OAuthOptions{Resource: fuzzResource, Issuer: fuzzIssuer, KeyRefresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	v.keys = []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}}
	v.at, v.tried = time.Now(), time.Now()
	return v
}

func signFuzz(t testing.TB, key *ecdsa.PrivateKey, claims any) string {
	return signFuzzTyped(t, key, claims, "at+jwt")
}

// signFuzzTyped is signFuzz with typ as the typ header, whatever it is.
func signFuzzTyped(t testing.TB, key *ecdsa.PrivateKey, claims any, typ any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("typ", typ).WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// FuzzVerifyToken: whatever a caller sends as a bearer token, verify
// answers without panicking, refuses it as an invalid token (a 401),
// and accepts only a token that the key signed for the issuer and
// resource, unexpired, with a subject, typed as an access token or not
// at all.
func FuzzVerifyToken(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Now()
	valid := jwt.Claims{Issuer: fuzzIssuer, Subject: "alice", Audience: jwt.Audience{fuzzResource}, Expiry: jwt.NewNumericDate(now.Add(time.Hour))}
	f.Add(signFuzz(f, key, valid))
	expired := valid
	expired.Expiry = jwt.NewNumericDate(now.Add(-time.Hour))
	f.Add(signFuzz(f, key, expired))
	f.Add(signFuzz(f, key, map[string]any{"iss": fuzzIssuer, "sub": 7, "aud": []string{fuzzResource, "x"}, "exp": 1e300}))
	f.Add(signFuzzTyped(f, key, valid, "dpop+jwt"))
	f.Add(signFuzzTyped(f, key, valid, 7))
	f.Add(signFuzzTyped(f, key, valid, "JWT"))
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.")
	f.Add("a.b.c")
	f.Add("")
	f.Add("eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.e30.AAAA")
	v := fuzzVerifier(f, key)
	f.Fuzz(func(t *testing.T, token string) {
		ti, err := v.verify(context.Background(), token)
		if err != nil {
			if !errors.Is(err, auth.ErrInvalidToken) {
				t.Fatalf("refused as other than an invalid token: %v", err)
			}
			return
		}
		// Accepted: it must be what the key signed, as the library
		// reads it.
		tok, perr := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
		var c jwt.Claims
		if perr != nil || tok.Claims(&key.PublicKey, &c) != nil {
			t.Fatalf("accepted a token the key did not sign: %q", token)
		}
		if typ, ok := tok.Headers[0].ExtraHeaders[jose.HeaderType]; ok && !slices.Contains([]string{"at+jwt", "jwt", ""}, strings.TrimPrefix(strings.ToLower(fmt.Sprint(typ)), "application/")) {
			t.Fatalf("accepted a token of typ %v", typ)
		}
		if ti.UserID == "" || c.Issuer != fuzzIssuer || !c.Audience.Contains(fuzzResource) || c.Expiry == nil || ti.Expiration.Before(time.Now()) {
			t.Fatalf("accepted %q: %+v, claims %+v", token, ti, c)
		}
	})
}

// FuzzParseJWKS: whatever the issuer's jwks_uri answers, parseJWKS
// returns without panicking, and only public signing keys of the
// accepted algorithms.
func FuzzParseJWKS(f *testing.F) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	good, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	private, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key, KeyID: "k2"}}})
	f.Add(good)
	f.Add(private)
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","alg":"HS256"}]}`))
	f.Add([]byte(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB","alg":"RS256"},{"kty":"EC","crv":"P-256"}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := parseJWKS(data)
		if err != nil {
			if len(keys) != 0 {
				t.Fatal("keys with an error")
			}
			return
		}
		if len(keys) == 0 {
			t.Fatal("no keys and no error")
		}
		for _, k := range keys {
			if !k.IsPublic() || !k.Valid() || (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && !acceptedAlg(k.Algorithm)) {
				t.Fatalf("kept %+v", k)
			}
			if _, symmetric := k.Key.([]byte); symmetric {
				t.Fatal("kept a symmetric key")
			}
		}
	})
}

// The issuer's keys are fetched whether or not the request that needed
// them is still there: a caller that hangs up must not make the fetch
// fail, which would then be kept for KeyRefresh, refusing everyone.
func TestKeysFetchOutlivesItsCaller(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	}))
	t.Cleanup(srv.Close)
	v, err := newVerifier(OAuthOptions{Resource: srv.URL + "/mcp", Issuer: srv.URL, JWKSURL: srv.URL + "/jwks", KeyRefresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.key(gone, "k1", "ES256"); err != nil {
		t.Errorf("the keys, for a caller that hung up: %v", err)
	}
	if _, err := v.key(context.Background(), "k1", "ES256"); err != nil {
		t.Errorf("the keys, for the next caller: %v", err)
	}
}
