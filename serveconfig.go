package conduit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// ServeConfig is the "serve" object of a configuration: how conduit serve
// (package gateway) authenticates its HTTP clients. Tokens are named by
// environment variable, never written in the file.
//
//	"serve": {
//	  "tokens": [
//	    {"principal": "alice", "env": "CONDUIT_TOKEN_ALICE"},
//	    {"principal": "ci", "env": "CONDUIT_TOKEN_CI"}
//	  ],
//	  "hosts": ["mcp.internal"],
//	  "origins": ["https://app.example.com"]
//	}
type ServeConfig struct {
	// Tokens are the bearer tokens HTTP clients may present, each
	// authenticating a principal.
	Tokens []ServeToken
	// Hosts are the host names a request's Host header may name besides
	// loopback ones; Origins the browser origins allowed besides those.
	Hosts, Origins []string
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
	Tokens  []json.RawMessage `json:"tokens"`
	Hosts   []string          `json:"hosts"`
	Origins []string          `json:"origins"`
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
