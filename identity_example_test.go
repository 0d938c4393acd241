package conduit_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/identitytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// One hub for many users: the server's sessions are per principal, each
// opened with that principal's own credentials, so the server sees alice
// in alice's calls and bob in bob's. A call for nobody is refused, nothing
// sent. (identitytest is a server that answers whoami with the user whose
// token it received.)
func ExampleIdentity() {
	srv := httptest.NewServer(identitytest.NewHTTP(map[string]string{"gh-alice-0123": "alice", "gh-bob-0123": "bob"}))
	defer srv.Close()
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{
		ID: "github", URL: srv.URL, Identity: conduit.IdentityPrincipal,
		Principals: map[string]conduit.Credentials{
			"alice": {Headers: map[string]string{"Authorization": "Bearer gh-alice-0123"}},
			"bob":   {Headers: map[string]string{"Authorization": "Bearer gh-bob-0123"}},
		},
	}}, &conduit.Options{Policy: conduit.AllowAll(), MaxPrincipalSessions: 100})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	for _, user := range []string{"alice", "bob"} {
		res, err := hub.CallTool(ctx, "github__whoami", nil, &conduit.CallOptions{Principal: user})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s's call: the server sees %s\n", user, res.Content[0].(*mcp.TextContent).Text)
	}
	_, err = hub.CallTool(ctx, "github__whoami", nil, nil)
	fmt.Println(errors.Is(err, conduit.ErrNoPrincipal))
	// Output:
	// alice's call: the server sees alice
	// bob's call: the server sees bob
	// true
}
