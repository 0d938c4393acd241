package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// fileConfig is the "oauth" object of an mcpServers entry. Secrets are
// named by environment variable only: a file that holds one is refused.
type fileConfig struct {
	Grant             string   `json:"grant"`
	ClientID          string   `json:"clientId"`
	ClientIDEnv       string   `json:"clientIdEnv"`
	ClientSecretEnv   string   `json:"clientSecretEnv"`
	PrivateKeyEnv     string   `json:"privateKeyEnv"`
	PrivateKeyFile    string   `json:"privateKeyFile"`
	SigningAlg        string   `json:"signingAlg"`
	Scopes            []string `json:"scopes"`
	RedirectURL       string   `json:"redirectUrl"`
	MetadataURL       string   `json:"metadataUrl"`
	ClientMetadataURL string   `json:"clientMetadataUrl"`
	AssertionFile     string   `json:"assertionFile"`
	AssertionEnv      string   `json:"assertionEnv"`
	DPoP              bool     `json:"dpop"`
	IdP               *struct {
		Issuer          string `json:"issuer"`
		TokenEndpoint   string `json:"tokenEndpoint"`
		ClientID        string `json:"clientId"`
		ClientIDEnv     string `json:"clientIdEnv"`
		ClientSecretEnv string `json:"clientSecretEnv"`
		IDTokenEnv      string `json:"idTokenEnv"`
	} `json:"idp"`
}

// secretKeys are keys a configuration file must not have, and what to
// write instead.
var secretKeys = map[string]string{
	"clientSecret":  "clientSecretEnv",
	"client_secret": "clientSecretEnv",
	"privateKey":    "privateKeyEnv or privateKeyFile",
	"accessToken":   "conduit login",
	"refreshToken":  "conduit login",
	"idToken":       "idTokenEnv",
	"assertion":     "assertionFile or assertionEnv",
}

// ParseConfig parses the "oauth" object of a server in a configuration
// file for the server at endpoint:
//
//	"oauth": {
//	  "clientId": "conduit-cli",            (or "clientIdEnv": "VAR")
//	  "clientSecretEnv": "LINEAR_SECRET",
//	  "scopes": ["read", "write"],
//	  "redirectUrl": "http://127.0.0.1:8976/callback",
//	  "grant": "authorization_code",        (or "client_credentials", "cross_app_access", "jwt_bearer", "token_exchange")
//	  "metadataUrl": "https://mcp.example.com/.well-known/oauth-protected-resource",
//	  "clientMetadataUrl": "https://example.com/conduit-client.json",
//	  "privateKeyFile": "/path/key.pem",    (or "privateKeyEnv"; "signingAlg": "ES256")
//	  "idp": {"issuer": "https://idp.example.com", "clientId": "...", "clientSecretEnv": "...", "idTokenEnv": "..."},
//	  "assertionFile": "/var/run/secrets/tokens/mcp",  (or "assertionEnv"; the jwt_bearer grant)
//	  "dpop": true                          (sender-constrained tokens, RFC 9449)
//	}
//
// Every key is optional; {} is the authorization code grant with
// everything discovered. Secrets are only named by environment variable:
// a "clientSecret" (or a token) in the file is an error that says so.
// Unknown keys are errors.
func ParseConfig(data []byte, endpoint string) (*Config, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, errors.New(`"oauth" must be an object`)
	}
	check := func(m map[string]json.RawMessage, where string) error {
		for k := range m {
			if instead, ok := secretKeys[k]; ok {
				return fmt.Errorf("%s%q holds a secret, which a configuration file must not: use %s", where, k, instead)
			}
		}
		return nil
	}
	if err := check(keys, ""); err != nil {
		return nil, err
	}
	if raw, ok := keys["idp"]; ok {
		var idp map[string]json.RawMessage
		if json.Unmarshal(raw, &idp) == nil {
			if err := check(idp, "idp: "); err != nil {
				return nil, err
			}
		}
	}
	var f fileConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%q has the wrong type (%s)", te.Field, te.Value)
		}
		if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("unknown key %s", k)
		}
		return nil, err
	}
	c := &Config{
		Grant: Grant(f.Grant), ClientID: f.ClientID, ClientIDEnv: f.ClientIDEnv, ClientSecretEnv: f.ClientSecretEnv,
		PrivateKeyEnv: f.PrivateKeyEnv, PrivateKeyFile: f.PrivateKeyFile, SigningAlg: f.SigningAlg,
		Scopes: f.Scopes, RedirectURL: f.RedirectURL, MetadataURL: f.MetadataURL, ClientMetadataURL: f.ClientMetadataURL,
		AssertionFile: f.AssertionFile, AssertionEnv: f.AssertionEnv, DPoP: f.DPoP,
	}
	if f.IdP != nil {
		c.IdP = &IdP{Issuer: f.IdP.Issuer, TokenEndpoint: f.IdP.TokenEndpoint, ClientID: f.IdP.ClientID,
			ClientIDEnv: f.IdP.ClientIDEnv, ClientSecretEnv: f.IdP.ClientSecretEnv, IDTokenEnv: f.IdP.IDTokenEnv}
	}
	if err := c.Validate(endpoint); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "oauth: "))
	}
	return c, nil
}
