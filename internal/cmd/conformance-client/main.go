// Command conformance-client is an MCP client built on conduit for the MCP
// conformance suite's client scenarios: the suite runs it with the test
// server's URL as its last argument, the scenario's name in
// MCP_CONFORMANCE_SCENARIO and, for some, a JSON context (credentials) in
// MCP_CONFORMANCE_CONTEXT. Every call goes through conduit's governed
// pipeline and every auth scenario through conduit's oauth package, so the
// suite checks conduit's sessions, transports and OAuth, not the bare
// SDK's.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/oauth"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scenario is what the client does once connected: the tool it must call,
// with its arguments ("" to only list).
type scenario struct {
	tool string
	args map[string]any
}

var scenarios = map[string]scenario{
	"initialize":                          {},
	"tools_call":                          {tool: "add_numbers", args: map[string]any{"a": 5, "b": 3}},
	"sse-retry":                           {tool: "test_reconnection", args: map[string]any{}},
	"elicitation-sep1034-client-defaults": {tool: "test_client_elicitation_defaults", args: map[string]any{}},
}

// authScenario is what every auth/ scenario does: list, then call the
// test server's one tool.
var authScenario = scenario{tool: "test-tool", args: map[string]any{}}

// clientMetadataURL is the client ID metadata document the suite expects
// a client to use where the authorization server supports them.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatalf("usage: %s <server-url> (with MCP_CONFORMANCE_SCENARIO set)", os.Args[0])
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	sc, ok := scenarios[name]
	var oc *oauth.Config
	if strings.HasPrefix(name, "auth/") {
		var err error
		if oc, err = oauthConfig(name, os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
			log.Fatalf("scenario %s: %v", name, err)
		}
		sc, ok = authScenario, true
	}
	if !ok {
		log.Fatalf("unknown scenario %q", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[len(os.Args)-1], sc, oc); err != nil {
		log.Fatalf("scenario %s: %v", name, err)
	}
}

// oauthConfig is the OAuth setting a user would write for the scenario's
// server: the grant and the credentials the suite hands out in its
// context. Everything else is discovered.
func oauthConfig(name, rawContext string) (*oauth.Config, error) {
	var c struct {
		ClientID         string `json:"client_id"`
		ClientSecret     string `json:"client_secret"`
		PrivateKeyPEM    string `json:"private_key_pem"`
		SigningAlgorithm string `json:"signing_algorithm"`
		IdPClientID      string `json:"idp_client_id"`
		IdPIDToken       string `json:"idp_id_token"`
		IdPIssuer        string `json:"idp_issuer"`
		IdPTokenEndpoint string `json:"idp_token_endpoint"`
	}
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &c); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	switch {
	case strings.HasPrefix(name, "auth/client-credentials-"):
		return &oauth.Config{Grant: oauth.GrantClientCredentials, ClientID: c.ClientID,
			ClientSecret: c.ClientSecret, PrivateKey: c.PrivateKeyPEM, SigningAlg: c.SigningAlgorithm}, nil
	case strings.HasPrefix(name, "auth/cross-app-access"):
		return &oauth.Config{Grant: oauth.GrantCrossApp, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
			IdP: &oauth.IdP{Issuer: c.IdPIssuer, TokenEndpoint: c.IdPTokenEndpoint, ClientID: c.IdPClientID,
				IDToken: func(context.Context) (string, error) { return c.IdPIDToken, nil }}}, nil
	}
	return &oauth.Config{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		ClientMetadataURL: clientMetadataURL,
		RedirectURL:       "http://localhost:3000/callback",
		Authorize:         followRedirect,
	}, nil
}

// followRedirect is the interactive step without a person: the suite's
// authorization server redirects at once, and the redirect carries the
// code and state.
func followRedirect(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.String() == "" {
		return nil, fmt.Errorf("the authorization endpoint answered %s without a redirect", resp.Status)
	}
	q := loc.Query()
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

func run(ctx context.Context, url string, sc scenario, oc *oauth.Config) error {
	cl, err := conduit.NewClient(ctx, conduit.Server{ID: "conformance", URL: url, OAuth: oc}, &conduit.Options{Policy: conduit.AllowAll(),
		// Accepting with no content lets conduit fill the requested
		// schema's defaults, which is what SEP-1034 checks.
		Handlers: &conduit.Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}}})
	if err != nil {
		return err
	}
	defer cl.Close()
	if st := cl.Status()[0]; st.State != conduit.StateUp {
		return fmt.Errorf("could not connect: %v", st.Err)
	}
	ts, err := cl.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	if sc.tool == "" {
		return nil
	}
	name, ok := ts.ExposedName("conformance", sc.tool)
	if !ok {
		if st := cl.Status()[0]; st.Err != nil {
			return fmt.Errorf("the server does not list %q: it is %s: %v", sc.tool, st.State, st.Err)
		}
		return fmt.Errorf("the server does not list %q (skipped: %v)", sc.tool, ts.Skipped())
	}
	res, err := cl.CallTool(ctx, name, sc.args, &conduit.CallOptions{ToolSet: ts})
	if err != nil {
		return fmt.Errorf("calling %s: %w", sc.tool, err)
	}
	if res.IsError {
		return fmt.Errorf("%s answered isError", sc.tool)
	}
	return nil
}
