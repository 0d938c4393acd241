package oauth

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	const ep = "https://mcp.example.com/mcp"
	c, err := ParseConfig([]byte(`{"clientId": "cli", "clientSecretEnv": "SECRET", "scopes": ["read"], "redirectUrl": "http://127.0.0.1:8976/callback"}`), ep)
	if err != nil {
		t.Fatal(err)
	}
	if c.ClientID != "cli" || c.ClientSecretEnv != "SECRET" || c.Scopes[0] != "read" || c.grant() != GrantAuthorizationCode {
		t.Fatalf("parsed %v", c)
	}
	if c, err := ParseConfig([]byte(`{}`), ep); err != nil || c.grant() != GrantAuthorizationCode {
		t.Fatalf("{} = %v, %v", c, err)
	}
	c, err = ParseConfig([]byte(`{"grant": "jwt_bearer", "clientId": "w", "assertionFile": "/var/run/secrets/tokens/mcp", "dpop": true}`), ep)
	if err != nil || c.grant() != GrantJWTBearer || c.AssertionFile != "/var/run/secrets/tokens/mcp" || !c.DPoP {
		t.Fatalf("the jwt_bearer setting parsed as %v, %v", c, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"clientSecret": "s3cret-value"}`, "clientSecretEnv"},
		{`{"grant": "cross_app_access", "clientId": "c", "idp": {"issuer": "https://idp", "clientId": "i", "idToken": "eyJ..."}}`, "idTokenEnv"},
		{`{"privateKey": "-----BEGIN"}`, "privateKeyFile"},
		{`{"scope": "x"}`, `unknown key "scope"`},
		{`{"scopes": "read"}`, `"scopes"`},
		{`{"grant": "password"}`, "unknown grant"},
		{`{"grant": "client_credentials"}`, "client id"},
		{`{"grant": "client_credentials", "clientId": "c"}`, "secret or a private key"},
		{`{"redirectUrl": "http://example.com/cb"}`, "HTTPS"},
		{`{"grant": "jwt_bearer", "assertion": "eyJ..."}`, "assertionFile or assertionEnv"},
		{`{"grant": "jwt_bearer"}`, "assertion file"},
		{`{"grant": "jwt_bearer", "assertionFile": "/t", "assertionEnv": "T"}`, "one of them"},
		{`{"assertionFile": "/t"}`, "for the jwt_bearer grant"},
		{`{"dpop": "yes"}`, `"dpop"`},
		{`[]`, "object"},
	} {
		_, err := ParseConfig([]byte(tc.in), ep)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%s) = %v, want an error about %s", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret-value") {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
	if _, err := ParseConfig([]byte(`{}`), "http://mcp.example.com/mcp"); err == nil {
		t.Error("OAuth over plain HTTP off loopback was accepted")
	}
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"clientId": "c", "clientSecretEnv": "S", "scopes": ["a", "b"], "grant": "authorization_code"}`,
		`{"grant": "client_credentials", "clientId": "c", "privateKeyFile": "/k.pem", "signingAlg": "ES256"}`,
		`{"grant": "cross_app_access", "clientIdEnv": "C", "idp": {"issuer": "https://idp", "clientId": "i", "idTokenEnv": "T"}}`,
		`{"clientSecret": "x"}`, `{"idp": {"idToken": "x"}}`, `null`, `[`, `{"scopes": [""]}`,
		`{"grant": "jwt_bearer", "assertionEnv": "T", "dpop": true}`, `{"assertion": "x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "https://mcp.example.com/mcp")
		if err != nil {
			if c != nil {
				t.Fatal("a config with an error")
			}
			return
		}
		if err := c.Validate("https://mcp.example.com/mcp"); err != nil {
			t.Fatalf("an invalid config was accepted: %v", err)
		}
		if c.ClientSecret != "" || c.PrivateKey != "" || (c.IdP != nil && c.IdP.ClientSecret != "") {
			t.Fatal("a secret was taken from the file")
		}
	})
}
