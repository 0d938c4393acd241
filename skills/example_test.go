package skills_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/skills"
)

// A skill is listed without reading it, loaded when the agent needs it,
// and its other files read one by one, each checked against the listing.
// The policy allows loading the skill (docs/skill:NAME) and reading its
// files (docs/URI). Compiled, not run: it needs a server with skills.
func ExampleLoad() {
	ctx := context.Background()
	cl, err := conduit.NewClient(ctx, conduit.Server{ID: "docs", URL: "https://mcp.example.com/mcp"},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("docs/skill:pdf-processing", "docs/skill://pdf-processing/*"))})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	list, err := skills.List(ctx, cl, nil) // reads no skill file
	if err != nil {
		log.Print(err) // a server that failed; the others' skills are listed
	}
	for _, sk := range list {
		loaded, err := skills.Load(ctx, cl, sk, nil)
		if errors.Is(err, skills.ErrVerification) {
			log.Printf("skill %s is not what its listing says: %v", sk.Name, err)
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(loaded.Instructions)
	}
}

// A skill's directory is read where the server declares directoryRead;
// only the children its manifest accounts for are returned. Compiled,
// not run: it needs a server with skills.
func ExampleReadDirectory() {
	ctx := context.Background()
	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "docs", URL: "https://mcp.example.com/mcp"}},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("docs/skill:*", "docs/skill://*"))})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	list, err := skills.List(ctx, hub, nil)
	if err != nil {
		log.Print(err)
	}
	for _, sk := range list {
		children, err := skills.ReadDirectory(ctx, hub, sk, sk.Dir(), nil)
		if err != nil {
			log.Print(err) // -32601 where the server does not declare directoryRead
			continue
		}
		for _, c := range children {
			fmt.Println(c.URI, c.MIMEType) // inode/directory for a subdirectory
		}
	}
}
