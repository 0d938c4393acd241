package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Grant is how conduit gets tokens for a server.
type Grant string

// The grants.
const (
	// GrantAuthorizationCode: a person signs in, in a browser (the OAuth 2.1
	// authorization code grant with PKCE). The default.
	GrantAuthorizationCode Grant = "authorization_code"
	// GrantClientCredentials: a program authenticates itself, with no
	// person involved (RFC 6749 §4.4, the MCP extension SEP-1046). It uses
	// a client secret (client_secret_basic or client_secret_post) or a
	// private key (private_key_jwt, RFC 7523).
	GrantClientCredentials Grant = "client_credentials"
	// GrantCrossApp: enterprise-managed authorization (the MCP extension
	// SEP-990). The enterprise identity provider exchanges the user's ID
	// token for an ID-JAG (RFC 8693). The server's authorization server
	// exchanges that for an access token (RFC 7523).
	GrantCrossApp Grant = "cross_app_access"
	// GrantJWTBearer: workload identity federation (the MCP extension
	// SEP-1933). The assertion of the JWT bearer grant (RFC 7523 §2.1) is
	// a token the workload's platform issues it. Examples are a Kubernetes
	// projected service account token or a cloud identity token. It is
	// read anew from Config.AssertionFile (or AssertionEnv) for every
	// token request, so a rotated token is used.
	GrantJWTBearer Grant = "jwt_bearer"
	// GrantTokenExchange: on behalf of a user (RFC 8693). The subject
	// token is the user's own access token, from Config.SubjectToken. For
	// a server of conduit.IdentityPrincipal it comes from
	// conduit.Options.SubjectToken; conduit serve fills that with its
	// caller's token. The client ClientID exchanges it at the server's
	// authorization server for an access token of the server's. The
	// authorization server must list the grant in its metadata. A user
	// without a token to exchange needs a login.
	GrantTokenExchange Grant = "token_exchange"
)

// DefaultRedirectURL is the redirect URL of the authorization code grant
// when Config.RedirectURL is empty. A loopback redirect URL without a port
// means any free port. Authorization servers accept that for loopback
// redirects (RFC 8252 §7.3), and dynamic registration keeps it as it is.
const DefaultRedirectURL = "http://127.0.0.1/callback"

// DefaultAuthorizeTimeout is how long the interactive step may take when
// Config.AuthorizeTimeout is 0. It is longer than [Loopback]'s default
// wait for a browser (five minutes). The code exchange after a late
// answer still fits.
const DefaultAuthorizeTimeout = 10 * time.Minute

// Config is the OAuth setting of one server. The zero value is the
// authorization code grant with PKCE and discovery of everything. It
// registers dynamically and keeps tokens in memory. It has no interactive
// step, so a server that needs a login is reported as needing one.
//
// Secrets may be given as values, from a program's own secret manager.
// They may also be the names of environment variables, read when needed.
// Configuration files only ever name variables.
type Config struct {
	// Grant is the grant to use; "" is GrantAuthorizationCode.
	Grant Grant

	// ClientID is a client registered in advance with the authorization
	// server, or ClientIDEnv the variable that holds it. Without one, the
	// authorization code grant uses ClientMetadataURL or dynamic client
	// registration (RFC 7591).
	ClientID    string
	ClientIDEnv string
	// ClientSecret, or the variable ClientSecretEnv, is the secret of
	// ClientID, for confidential clients and client_secret_basic or
	// client_secret_post.
	ClientSecret    string
	ClientSecretEnv string

	// PrivateKey is a PEM private key (PKCS #8, SEC 1 EC or PKCS #1 RSA).
	// The client credentials grant signs private_key_jwt assertions with
	// it. PrivateKeyEnv names a variable that holds one instead, and
	// PrivateKeyFile a file. SigningAlg is the JWS algorithm (ES256,
	// ES384, ES512, RS256, PS256, EdDSA, ...). "" picks the usual one for
	// the key.
	PrivateKey     string
	PrivateKeyEnv  string
	PrivateKeyFile string
	SigningAlg     string

	// Scopes are asked for by every grant. They add to the scopes the
	// server names, which the MCP specification says to ask for. The
	// server names them in its WWW-Authenticate challenge, or else in its
	// protected resource metadata.
	Scopes []string

	// RedirectURL is where the authorization server sends the browser back
	// to; "" is [DefaultRedirectURL]. It must be HTTPS, or HTTP on a
	// loopback address.
	RedirectURL string

	// MetadataURL is the server's protected resource metadata (RFC 9728),
	// for a server that does not say where it is. Discovery still checks
	// that it names the server.
	MetadataURL string

	// ClientMetadataURL is the HTTPS URL of a client ID metadata document
	// (SEP-991) describing conduit. Authorization servers that support
	// such documents take it as the client id.
	ClientMetadataURL string

	// IdP is the enterprise identity provider of GrantCrossApp.
	IdP *IdP

	// AssertionFile is the file that holds the JWT of GrantJWTBearer, as
	// a platform projects one (Kubernetes:
	// /var/run/secrets/tokens/<name>); or AssertionEnv the variable that
	// holds it. It is read for every token request. An expired one is not
	// sent. One the authorization server refused is not sent again.
	AssertionFile string
	AssertionEnv  string

	// SubjectToken returns the user's own access token, which
	// GrantTokenExchange exchanges. "" or an error means there is none,
	// and the user needs a login. conduit sets it for each principal of a
	// server of identity principal from conduit.Options.SubjectToken.
	SubjectToken func(context.Context) (string, error)

	// DPoP makes every grant ask for sender-constrained tokens (RFC 9449).
	// Token requests, and requests that carry the tokens, go with a proof.
	// The proof is signed by the handler's own ES256 key, stored with the
	// tokens. Without DPoP set, it is used once a server's challenge asks
	// for it (the DPoP scheme). Server-provided nonces are honoured.
	DPoP bool

	// Store keeps tokens between connections and processes; nil keeps them
	// in memory for the life of the handler.
	Store TokenStore
	// Locker serializes the refreshes of these tokens among processes
	// that share Store (see [Locker]). Store's own lock also applies when
	// it is a Locker; [FileStore] is one for the processes of one machine.
	// Nil means Store's own only. conduit gives every server's handler one
	// on its hub's store (conduit.Options.Store). So the replicas of
	// conduit serve that share a Redis store refresh one at a time.
	Locker Locker
	// Principal is the Key.Principal tokens are stored under; "" for the
	// tokens every caller shares.
	Principal string

	// Authorize is the interactive step of the authorization code grant:
	// send the user to the URL (open a browser, redirect a web app's user)
	// and return the code and state the authorization server redirected
	// back with. Nil means there is no one to ask: a server that needs a
	// login fails with an error that matches [ErrNeedsLogin], at once.
	// See [Loopback] for a browser on this machine.
	Authorize auth.AuthorizationCodeFetcher

	// HTTPClient sends the requests to authorization servers; nil uses
	// the client of the server's connection, without its static headers.
	HTTPClient *http.Client

	// Getenv reads the variables named above; nil is os.Getenv.
	Getenv func(string) string

	// AuthorizeTimeout bounds the interactive step: Authorize, and the
	// code exchange after it. The step runs apart from the deadline of the
	// request that needed it (a connect timeout is meant for machines, not
	// for a person signing in); canceling that request's context still
	// ends it. 0 is [DefaultAuthorizeTimeout].
	AuthorizeTimeout time.Duration

	// LoginPoll is how often a server that needs a login checks its token
	// store for a login made by another process (conduit login); 0 is 10
	// seconds. Nothing is sent to the server meanwhile.
	LoginPoll time.Duration
}

// IdP is an enterprise identity provider for [GrantCrossApp].
type IdP struct {
	// Issuer is the provider's issuer URL; its token endpoint is
	// discovered from it unless TokenEndpoint is set.
	Issuer        string
	TokenEndpoint string
	// ClientID (or the variable ClientIDEnv) is conduit's client at the
	// provider, and ClientSecret (ClientSecretEnv) its secret, if it has
	// one.
	ClientID        string
	ClientIDEnv     string
	ClientSecret    string
	ClientSecretEnv string
	// IDToken returns the user's OpenID Connect ID token, such as one from
	// extauth.PerformOIDCLogin; or IDTokenEnv names the variable that
	// holds one.
	IDToken    func(context.Context) (string, error)
	IDTokenEnv string
}

// String describes the configuration with its secrets redacted, so that
// printing a conduit.Server never shows them.
func (c *Config) String() string {
	if c == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "oauth.Config{Grant: %s", c.grant())
	if id := c.ClientID; id != "" {
		fmt.Fprintf(&b, ", ClientID: %q", id)
	}
	for _, f := range []struct{ name, value string }{
		{"ClientIDEnv", c.ClientIDEnv}, {"ClientSecretEnv", c.ClientSecretEnv},
		{"PrivateKeyEnv", c.PrivateKeyEnv}, {"PrivateKeyFile", c.PrivateKeyFile},
		{"AssertionFile", c.AssertionFile}, {"AssertionEnv", c.AssertionEnv},
		{"RedirectURL", c.RedirectURL}, {"MetadataURL", c.MetadataURL},
	} {
		if f.value != "" {
			fmt.Fprintf(&b, ", %s: %q", f.name, f.value)
		}
	}
	if c.ClientSecret != "" || c.PrivateKey != "" || (c.IdP != nil && c.IdP.ClientSecret != "") {
		b.WriteString(", secrets redacted")
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so that %#v redacts too.
func (c *Config) GoString() string { return c.String() }

func (c *Config) grant() Grant {
	if c.Grant == "" {
		return GrantAuthorizationCode
	}
	return c.Grant
}

func (c *Config) getenv(name string) string {
	if c.Getenv != nil {
		return c.Getenv(name)
	}
	return os.Getenv(name)
}

// value returns v, or the variable env; required errors name the setting.
func (c *Config) value(v, env, what string, required bool) (string, error) {
	if v != "" {
		return v, nil
	}
	if env != "" {
		if s := c.getenv(env); s != "" {
			return s, nil
		}
		if required {
			return "", fmt.Errorf("oauth: the environment variable %s (%s) is not set", env, what)
		}
		return "", nil
	}
	if required {
		return "", fmt.Errorf("oauth: no %s configured", what)
	}
	return "", nil
}

// Validate checks the configuration for the server at endpoint, without
// reading any variable or file.
func (c *Config) Validate(endpoint string) error {
	if c == nil {
		return errors.New("oauth: nil Config")
	}
	if err := CheckEndpoint("the server URL", endpoint); err != nil {
		return err
	}
	both := func(a, b, what string) error {
		if a != "" && b != "" {
			return fmt.Errorf("oauth: set %s or its environment variable, not both", what)
		}
		return nil
	}
	for _, p := range [][3]string{
		{c.ClientID, c.ClientIDEnv, "the client id"},
		{c.ClientSecret, c.ClientSecretEnv, "the client secret"},
	} {
		if err := both(p[0], p[1], p[2]); err != nil {
			return err
		}
	}
	keys := 0
	for _, k := range []string{c.PrivateKey, c.PrivateKeyEnv, c.PrivateKeyFile} {
		if k != "" {
			keys++
		}
	}
	if keys > 1 {
		return errors.New("oauth: set one of the private key, its environment variable or its file")
	}
	hasID := c.ClientID != "" || c.ClientIDEnv != ""
	hasSecret := c.ClientSecret != "" || c.ClientSecretEnv != ""
	if hasSecret && !hasID {
		return errors.New("oauth: a client secret needs a client id")
	}
	switch c.grant() {
	case GrantAuthorizationCode:
		if keys > 0 {
			return errors.New("oauth: a private key is for the client_credentials grant")
		}
	case GrantClientCredentials:
		if !hasID {
			return errors.New("oauth: the client_credentials grant needs a client id")
		}
		if hasSecret == (keys > 0) {
			return errors.New("oauth: the client_credentials grant needs a client secret or a private key (one of them)")
		}
	case GrantCrossApp:
		if !hasID {
			return errors.New("oauth: the cross_app_access grant needs the client id registered at the server's authorization server")
		}
		if c.IdP == nil {
			return errors.New("oauth: the cross_app_access grant needs an identity provider (IdP)")
		}
		if err := c.IdP.validate(); err != nil {
			return err
		}
	case GrantTokenExchange:
		if !hasID {
			return errors.New("oauth: the token_exchange grant needs the client id registered at the server's authorization server")
		}
		if keys > 0 {
			return errors.New("oauth: a private key is for the client_credentials grant")
		}
	case GrantJWTBearer:
		if (c.AssertionFile != "") == (c.AssertionEnv != "") {
			return errors.New("oauth: the jwt_bearer grant needs an assertion file or the environment variable that holds one (one of them)")
		}
		if keys > 0 {
			return errors.New("oauth: a private key is for the client_credentials grant")
		}
	default:
		return fmt.Errorf("oauth: unknown grant %q (authorization_code, client_credentials, cross_app_access, jwt_bearer or token_exchange)", c.Grant)
	}
	if (c.AssertionFile != "" || c.AssertionEnv != "") && c.grant() != GrantJWTBearer {
		return errors.New("oauth: an assertion (file or environment variable) is for the jwt_bearer grant")
	}
	if c.IdP != nil && c.grant() != GrantCrossApp {
		return errors.New("oauth: an identity provider (IdP) is for the cross_app_access grant")
	}
	if c.SigningAlg != "" && keys == 0 {
		return errors.New("oauth: a signing algorithm needs a private key")
	}
	if c.RedirectURL != "" {
		if err := CheckEndpoint("the redirect URL", c.RedirectURL); err != nil {
			return err
		}
	}
	if c.MetadataURL != "" {
		if err := CheckEndpoint("the metadata URL", c.MetadataURL); err != nil {
			return err
		}
	}
	if c.ClientMetadataURL != "" {
		u, err := url.Parse(c.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return errors.New("oauth: the client metadata URL must be an HTTPS URL with a path")
		}
	}
	for _, s := range c.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			return fmt.Errorf("oauth: %q is not a scope", s)
		}
	}
	if c.LoginPoll < 0 {
		return errors.New("oauth: LoginPoll is negative")
	}
	if c.AuthorizeTimeout < 0 {
		return errors.New("oauth: AuthorizeTimeout is negative")
	}
	return nil
}

func (p *IdP) validate() error {
	if p.Issuer == "" && p.TokenEndpoint == "" {
		return errors.New("oauth: the identity provider needs an issuer or a token endpoint")
	}
	for _, u := range []struct{ what, v string }{{"the identity provider's issuer", p.Issuer}, {"the identity provider's token endpoint", p.TokenEndpoint}} {
		if u.v != "" {
			if err := CheckEndpoint(u.what, u.v); err != nil {
				return err
			}
		}
	}
	if (p.ClientID != "") == (p.ClientIDEnv != "") {
		return errors.New("oauth: the identity provider needs a client id (or its environment variable; one of them)")
	}
	if p.ClientSecret != "" && p.ClientSecretEnv != "" {
		return errors.New("oauth: set the identity provider's client secret or its environment variable, not both")
	}
	if (p.IDToken != nil) == (p.IDTokenEnv != "") {
		return errors.New("oauth: the identity provider needs a source of ID tokens: IDToken or IDTokenEnv (one of them)")
	}
	return nil
}

// CheckEndpoint reports an error unless rawURL is an absolute HTTPS URL, or
// an HTTP URL on a loopback address (127.0.0.0/8, ::1, localhost): OAuth
// sends credentials, which must not cross a network in the clear. what
// names the URL in the error.
func CheckEndpoint(what, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("oauth: %s %q is not an absolute HTTP(S) URL", what, rawURL)
	}
	if u.User != nil {
		return fmt.Errorf("oauth: %s must not carry credentials", what)
	}
	if u.Fragment != "" {
		return fmt.Errorf("oauth: %s must not have a fragment", what)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("oauth: %s %s must use HTTPS: only loopback addresses may use plain HTTP", what, u.Redacted())
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := parseIP(host)
	return err == nil && ip.IsLoopback()
}

// union returns a and then what b adds, without duplicates, in order.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
