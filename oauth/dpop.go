// DPoP (RFC 9449): sender-constrained tokens, proven with a key of the
// handler's own on every request that carries them.

package oauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// dpopKey is a handler's DPoP key (ES256, which every authorization
// server that supports DPoP accepts) and the nonces servers gave it
// (RFC 9449 §8, §9), by origin.
type dpopKey struct {
	key    *ecdsa.PrivateKey
	signer jose.Signer

	mu     sync.Mutex
	nonces map[string]string
}

func newDPoPKey(key *ecdsa.PrivateKey) (*dpopKey, error) {
	if key == nil {
		var err error
		if key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, fmt.Errorf("oauth: making a DPoP key: %w", err)
		}
	}
	if key.Curve != elliptic.P256() {
		return nil, errors.New("oauth: a DPoP key must be a P-256 key")
	}
	// EmbedJWK puts the public key, and only it, in the proof's header.
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		&jose.SignerOptions{EmbedJWK: true, ExtraHeaders: map[jose.HeaderKey]any{"typ": "dpop+jwt"}})
	if err != nil {
		return nil, fmt.Errorf("oauth: a DPoP signer: %w", err)
	}
	return &dpopKey{key: key, signer: signer, nonces: map[string]string{}}, nil
}

// marshal is the key as a private JWK, for the token store: tokens bound to
// it are useless without it.
func (d *dpopKey) marshal() (string, error) {
	b, err := jose.JSONWebKey{Key: d.key, Algorithm: string(jose.ES256)}.MarshalJSON()
	return string(b), err
}

func parseDPoPKey(s string) (*dpopKey, error) {
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON([]byte(s)); err != nil {
		return nil, errors.New("oauth: the stored DPoP key cannot be parsed")
	}
	key, ok := jwk.Key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("oauth: the stored DPoP key is not an EC private key")
	}
	return newDPoPKey(key)
}

// htu is the proof's htu claim for u: no query, no fragment (RFC 9449 §4.2).
func htu(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

func nonceOrigin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// proof is a fresh proof for a request of method to u; accessToken, when
// set, is bound by its hash (ath).
func (d *dpopKey) proof(method string, u *url.URL, accessToken string) (string, error) {
	claims := map[string]any{
		"jti": rand.Text(),
		"htm": method,
		"htu": htu(u),
		"iat": time.Now().Unix(),
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	d.mu.Lock()
	if n := d.nonces[nonceOrigin(u)]; n != "" {
		claims["nonce"] = n
	}
	d.mu.Unlock()
	return jwt.Signed(d.signer).Claims(claims).Serialize()
}

// maxNonce bounds a nonce kept from a server.
const maxNonce = 1024

// parseNonce returns the nonce a DPoP-Nonce header carries (RFC 9449
// §8.1: 1*NQCHAR), or false.
func parseNonce(v string) (string, bool) {
	if v == "" || len(v) > maxNonce {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return v, true
}

// noteNonce keeps the nonce resp's server sent, if any; it reports
// whether the nonce is new.
func (d *dpopKey) noteNonce(u *url.URL, resp *http.Response) bool {
	n, ok := parseNonce(resp.Header.Get("DPoP-Nonce"))
	if !ok {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	o := nonceOrigin(u)
	if d.nonces[o] == n {
		return false
	}
	d.nonces[o] = n
	return true
}

// dpopTransport adds DPoP to a handler's requests: to its authorization
// servers' token endpoints (every form POST: code exchange, refresh and the
// grants without a user), or, with resource set, to the MCP server's
// requests that carry a DPoP-bound token, which go with the DPoP scheme.
// A use_dpop_nonce refusal is answered once with the nonce it brought.
type dpopTransport struct {
	h        *Handler
	base     http.RoundTripper
	resource bool
}

func (t *dpopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	d := t.h.dpop()
	if d == nil {
		return base.RoundTrip(req)
	}
	token := ""
	if t.resource {
		if token = bearer(req); token == "" || !t.h.bound(token) {
			return base.RoundTrip(req)
		}
	} else if !isForm(req) {
		return base.RoundTrip(req)
	}
	for try := 0; ; try++ {
		r, err := t.withProof(d, req, token, try > 0)
		if err != nil {
			return nil, err
		}
		resp, err := base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		fresh := d.noteNonce(req.URL, resp)
		if try > 0 || !fresh {
			return resp, nil
		}
		retry, err := nonceRefusal(resp, t.resource)
		if err != nil || !retry {
			return resp, err
		}
		// The refusal's body is spent; the retry is answered instead.
		resp.Body.Close()
	}
}

// withProof is req, or on a retry a copy with its body anew, with a
// proof; a bound token goes with the DPoP scheme (RFC 9449 §7.1).
func (t *dpopTransport) withProof(d *dpopKey, req *http.Request, token string, retry bool) (*http.Request, error) {
	r := req.Clone(req.Context())
	if retry && req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, errors.New("oauth: a request refused for want of a DPoP nonce cannot be sent again")
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	p, err := d.proof(req.Method, req.URL, token)
	if err != nil {
		return nil, fmt.Errorf("oauth: signing a DPoP proof: %w", err)
	}
	r.Header.Set("DPoP", p)
	if token != "" {
		r.Header.Set("Authorization", "DPoP "+token)
	}
	return r, nil
}

func isForm(req *http.Request) bool {
	if req.Method != http.MethodPost {
		return false
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return mt == "application/x-www-form-urlencoded"
}

// maxErrorBody bounds the part of a token endpoint's error read to see
// whether it asks for a nonce.
const maxErrorBody = 64 << 10

// nonceRefusal reports whether resp refuses a request for want of a DPoP
// nonce: a resource server's 401 with a use_dpop_nonce challenge (RFC 9449
// §9), or an authorization server's 400 whose error is use_dpop_nonce
// (§8). An authorization server's body is read to tell; the part read is
// put back.
func nonceRefusal(resp *http.Response, resource bool) (bool, error) {
	if resource {
		if resp.StatusCode != http.StatusUnauthorized {
			return false, nil
		}
		cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		return challengeParam(cs, "error") == "use_dpop_nonce", nil
	}
	if resp.StatusCode != http.StatusBadRequest {
		return false, nil
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return false, nil // the caller reads the error
	}
	return tokenError(head) == "use_dpop_nonce", nil
}

// tokenError is the error code of a token endpoint's JSON error answer
// (RFC 6749 §5.2), or "".
func tokenError(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error
}

// dpop returns the handler's DPoP key, or nil when it does not use DPoP.
func (h *Handler) dpop() *dpopKey {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	return h.dpopKey
}

// useDPoP makes the handler use DPoP from now on: configured, or asked for
// by the server's challenge.
func (h *Handler) useDPoP() error {
	h.tsMu.Lock()
	defer h.tsMu.Unlock()
	if h.dpopKey != nil {
		return nil
	}
	d, err := newDPoPKey(nil)
	if err != nil {
		return err
	}
	h.dpopKey = d
	return nil
}

// bound reports whether token is the handler's current access token and
// bound to its DPoP key (token_type DPoP, RFC 9449 §5); a Bearer token is
// sent as one, even when DPoP was asked for.
func (h *Handler) bound(token string) bool {
	ts := h.current()
	if ts == nil {
		return false
	}
	tok := ts.record().Token
	return tok != nil && tok.AccessToken == token && strings.EqualFold(tok.TokenType, "DPoP")
}

// usable refuses a token conduit cannot present (RFC 6749 §7.1: a client
// must not use a token whose type it does not understand): a Bearer token,
// or a DPoP token bound to the handler's key, is used.
func (h *Handler) usable(t *oauth2.Token) error {
	switch typ := t.Type(); {
	case strings.EqualFold(typ, "Bearer"):
		return nil
	case strings.EqualFold(typ, "DPoP"):
		if h.dpop() == nil {
			return errors.New("oauth: the authorization server issued a DPoP token, which conduit did not ask for and has no key for")
		}
		return nil
	default:
		return fmt.Errorf("oauth: the authorization server issued a token of type %q, which conduit cannot present", typ)
	}
}

// withDPoPKey puts the key that rec's DPoP token is bound to into rec,
// for the store.
func (h *Handler) withDPoPKey(rec *Record) error {
	d := h.dpop()
	if d == nil || rec.Token == nil || !strings.EqualFold(rec.Token.TokenType, "DPoP") {
		return nil
	}
	k, err := d.marshal()
	if err != nil {
		return fmt.Errorf("oauth: keeping the DPoP key: %w", err)
	}
	rec.DPoPKey = k
	return nil
}

// dpopChallenge reports whether the server's challenges ask for DPoP.
func dpopChallenge(cs []oauthex.Challenge) bool {
	for _, c := range cs {
		if c.Scheme == "dpop" {
			return true
		}
	}
	return false
}

// Attach makes t send its requests through h: h answers its 401s, and
// its HTTP client adds the DPoP proofs of a DPoP-bound token. t's
// HTTPClient (nil: http.DefaultClient) still sends them.
func (h *Handler) Attach(t *mcp.StreamableClientTransport) {
	t.OAuthHandler = h
	hc := t.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	cp := *hc
	cp.Transport = &dpopTransport{h: h, base: hc.Transport, resource: true}
	t.HTTPClient = &cp
}
