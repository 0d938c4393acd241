package conduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
)

// An extension package asks a server through the hub's governed hook:
// here the skills extension's skills/list, sent only if the server
// declares the extension. A request with Governed is decided by the
// policy first (a skill is server/skill:NAME). Package skills does this
// for you. Compiled, not run: it needs a server with skills.
func ExampleHub_Extension() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "docs", URL: "https://mcp.example.com/mcp"}},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("docs/skill:pdf-processing"))})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	raw, err := hub.Extension(ctx, &conduit.ExtensionRequest{
		Server: "docs", Extension: "io.modelcontextprotocol/skills", Method: "skills/list",
	}, nil)
	if err != nil {
		log.Fatal(err) // a server without the extension: a *jsonrpc.Error of -32601
	}
	var res struct{ Skills []json.RawMessage }
	json.Unmarshal(raw, &res)
	fmt.Println(len(res.Skills), "skills listed")

	// The policy's decision alone: nothing is sent.
	_, err = hub.Extension(ctx, &conduit.ExtensionRequest{Server: "docs", Extension: "io.modelcontextprotocol/skills",
		Method: "skills/load", DecideOnly: true, Governed: "skill:release-notes"}, nil)
	fmt.Println(errors.Is(err, conduit.ErrDenied))
}
