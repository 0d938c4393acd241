// The auth scenarios' servers, as a user would configure them in mcp.json.
// The setting is written as a configuration file's "oauth" object. Its
// secrets are put in the environment it names. conduit's own loader parses
// it.

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/config"
	"github.com/conduitmcp/conduit/internal/oauthtest"
)

func isAuth(name string) bool { return strings.HasPrefix(name, "auth/") }

// clientMetadataURL is the client ID metadata document the suite expects a
// client to use. It is used where the authorization server supports such
// documents.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// The environment variables the configuration names for the context's
// secrets.
const (
	envSecret     = "CONFORMANCE_CLIENT_SECRET"
	envPrivateKey = "CONFORMANCE_PRIVATE_KEY"
	envIdPToken   = "CONFORMANCE_IDP_ID_TOKEN"
)

// authServer is the server of auth scenario name at serverURL.
func authServer(name, serverURL string, sc *scenarioContext) (conduit.Server, error) {
	if sc.ValidJWT != "" {
		// The workload's token, in a file as Kubernetes projects one.
		f, err := os.CreateTemp("", "conformance-token-*")
		if err != nil {
			return conduit.Server{}, err
		}
		defer f.Close()
		if _, err := f.WriteString(sc.ValidJWT); err != nil {
			return conduit.Server{}, err
		}
		tokenFile = f.Name()
	}
	o := oauthSetting(name, sc)
	for env, v := range map[string]string{envSecret: sc.ClientSecret, envPrivateKey: sc.PrivateKeyPEM, envIdPToken: sc.IdPIDToken} {
		if v != "" {
			os.Setenv(env, v)
		}
	}
	file, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"conformance": map[string]any{"url": serverURL, "oauth": o},
	}})
	if err != nil {
		return conduit.Server{}, err
	}
	cfg, err := config.Parse(file)
	if err != nil {
		return conduit.Server{}, fmt.Errorf("the configuration %s: %w", file, err)
	}
	srv := cfg.Servers[0]
	// The interactive step is a program's, not a file's. The suite's
	// authorization server redirects at once with the code and state.
	srv.OAuth.Authorize = oauthtest.FollowRedirect
	return srv, nil
}

// oauthSetting is the "oauth" object a user would write for the scenario's
// server. It holds the grant and the credentials the suite hands out.
// Everything else is discovered.
func oauthSetting(name string, sc *scenarioContext) map[string]any {
	o := map[string]any{}
	if sc.ClientID != "" {
		o["clientId"] = sc.ClientID
	}
	if sc.ClientSecret != "" {
		o["clientSecretEnv"] = envSecret
	}
	switch {
	case strings.HasPrefix(name, "auth/client-credentials-"):
		o["grant"] = "client_credentials"
		if sc.PrivateKeyPEM != "" {
			o["privateKeyEnv"] = envPrivateKey
			o["signingAlg"] = sc.SigningAlgorithm
		}
	case name == "auth/wif-jwt-bearer":
		o["grant"] = "jwt_bearer"
		o["assertionFile"] = tokenFile
	case name == "auth/enterprise-managed-authorization", name == "auth/cross-app-access-complete-flow":
		// The same scenario: its name before suite 0.2 and after.
		o["grant"] = "cross_app_access"
		o["idp"] = map[string]any{"issuer": sc.IdPIssuer, "tokenEndpoint": sc.IdPTokenEndpoint,
			"clientId": sc.IdPClientID, "idTokenEnv": envIdPToken}
	default:
		o["clientMetadataUrl"] = clientMetadataURL
		o["redirectUrl"] = "http://localhost:3000/callback"
		if strings.HasPrefix(name, "auth/dpop") {
			o["dpop"] = true
		}
	}
	return o
}

// tokenFile is the workload token's file, removed when the client exits.
var tokenFile string
