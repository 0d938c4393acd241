package conduit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/conduitmcp/conduit/oauth"
)

// ServeConfig is the "serve" object of a configuration: how conduit serve
// (package gateway) authenticates its HTTP clients, and how long taint
// lasts. Tokens are named by environment variable, never written in the
// file.
//
//	"serve": {
//	  "tokens": [
//	    {"principal": "alice", "env": "CONDUIT_TOKEN_ALICE"},
//	    {"principal": "ci", "env": "CONDUIT_TOKEN_CI"}
//	  ],
//	  "oauth": {
//	    "issuer": "https://login.example.com",
//	    "resource": "https://mcp.example.com/mcp",
//	    "principalClaim": "email",
//	    "scopes": ["mcp"]
//	  },
//	  "taintLifetime": "24h",
//	  "hosts": ["mcp.example.com"],
//	  "origins": ["https://app.example.com"]
//	}
type ServeConfig struct {
	// Tokens are the bearer tokens HTTP clients may present, each
	// authenticating a principal.
	Tokens []ServeToken
	// OAuth, when set, also accepts the JWT access tokens of an
	// authorization server (see [ServeOAuth]).
	OAuth *ServeOAuth
	// TaintLifetime is how long a principal's taint lasts after its
	// latest addition; zero is gateway.DefaultTaintLifetime.
	TaintLifetime time.Duration
	// Hosts are the host names a request's Host header may name besides
	// loopback ones; Origins the browser origins allowed besides those.
	Hosts, Origins []string
}

// ServeOAuth is the "oauth" object of a [ServeConfig]: conduit serve as an
// OAuth 2.1 protected resource, accepting the JWT access tokens of Issuer
// whose audience is Resource (gateway.OAuthOptions says how they are
// checked).
type ServeOAuth struct {
	// Issuer is the authorization server; Resource is conduit serve's own
	// URL as its clients reach it.
	Issuer, Resource string
	// JWKSURL is where the issuer's keys are, when its metadata does not
	// say.
	JWKSURL string
	// PrincipalClaim is the claim that names the principal ("" is sub).
	PrincipalClaim string
	// Scopes are the scopes every token must have.
	Scopes []string
}

// ServeToken is one bearer token of a [ServeConfig].
type ServeToken struct {
	// Principal is who the token authenticates, as policy conditions see
	// it ("principal" rules).
	Principal string
	// Env names the environment variable that holds the token.
	Env string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

type serveEntry struct {
	Tokens        []json.RawMessage `json:"tokens"`
	OAuth         *serveOAuthEntry  `json:"oauth"`
	TaintLifetime string            `json:"taintLifetime"`
	Hosts         []string          `json:"hosts"`
	Origins       []string          `json:"origins"`
}

type serveOAuthEntry struct {
	Issuer         string   `json:"issuer"`
	Resource       string   `json:"resource"`
	JWKSURL        string   `json:"jwksUrl"`
	PrincipalClaim string   `json:"principalClaim"`
	Scopes         []string `json:"scopes"`
}

type tokenEntry struct {
	Principal *string `json:"principal"`
	Env       string  `json:"env"`
	// Refused with a message that says where a token goes.
	Token json.RawMessage `json:"token"`
}

// parseServe parses the "serve" object.
func parseServe(raw json.RawMessage) (*ServeConfig, error) {
	var e serveEntry
	if err := decodeStrict(raw, &e); err != nil {
		return nil, err
	}
	sc := &ServeConfig{}
	principals := map[string]bool{}
	envs := map[string]bool{}
	for i, r := range e.Tokens {
		var te tokenEntry
		if err := decodeStrict(r, &te); err != nil {
			return nil, fmt.Errorf("token %d: %w", i+1, err)
		}
		switch {
		case te.Token != nil:
			return nil, fmt.Errorf(`token %d: a token is never written in the configuration: name the environment variable that holds it with "env"`, i+1)
		case te.Principal == nil:
			return nil, fmt.Errorf(`token %d: needs a "principal"`, i+1)
		case !envName.MatchString(te.Env):
			return nil, fmt.Errorf(`token %d: "env" must name an environment variable (letters, digits and _), not %q`, i+1, te.Env)
		case principals[*te.Principal]:
			return nil, fmt.Errorf("token %d: principal %q has a token already", i+1, *te.Principal)
		case envs[te.Env]:
			return nil, fmt.Errorf("token %d: %s holds another principal's token already", i+1, te.Env)
		}
		principals[*te.Principal], envs[te.Env] = true, true
		sc.Tokens = append(sc.Tokens, ServeToken{Principal: *te.Principal, Env: te.Env})
	}
	if o := e.OAuth; o != nil {
		for _, f := range [][2]string{{"issuer", o.Issuer}, {"resource", o.Resource}, {"jwksUrl", o.JWKSURL}} {
			switch {
			case f[1] == "" && f[0] != "jwksUrl":
				return nil, fmt.Errorf("oauth: needs %q", f[0])
			case f[1] == "":
			default:
				if err := oauth.CheckEndpoint(strconv.Quote(f[0]), f[1]); err != nil {
					return nil, fmt.Errorf("oauth: %s", strings.TrimPrefix(err.Error(), "oauth: "))
				}
			}
		}
		sc.OAuth = &ServeOAuth{Issuer: o.Issuer, Resource: o.Resource, JWKSURL: o.JWKSURL, PrincipalClaim: o.PrincipalClaim, Scopes: o.Scopes}
	}
	if e.TaintLifetime != "" {
		d, err := time.ParseDuration(e.TaintLifetime)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("taintLifetime: %q is not a positive duration (such as \"24h\" or \"30m\")", e.TaintLifetime)
		}
		sc.TaintLifetime = d
	}
	for _, h := range e.Hosts {
		if h == "" || strings.ContainsAny(h, "/ \t@?#") {
			return nil, fmt.Errorf("hosts: %q is not a host name (with or without a port)", h)
		}
		sc.Hosts = append(sc.Hosts, h)
	}
	for _, o := range e.Origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("origins: %q is not an origin (scheme://host[:port])", o)
		}
		sc.Origins = append(sc.Origins, strings.TrimSuffix(o, "/"))
	}
	return sc, nil
}

// ResolveTokens reads each token from its environment variable with
// getenv and returns them as token → principal. A variable that is unset
// or empty is an error that names it (and never shows a token's value).
func (sc *ServeConfig) ResolveTokens(getenv func(string) string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, t := range sc.Tokens {
		v := getenv(t.Env)
		if v == "" {
			errs = append(errs, fmt.Errorf("the token of principal %q: %s is not set", t.Principal, t.Env))
			continue
		}
		if _, dup := out[v]; dup {
			errs = append(errs, fmt.Errorf("the token of principal %q in %s is another principal's too", t.Principal, t.Env))
			continue
		}
		out[v] = t.Principal
	}
	return out, errors.Join(errs...)
}
