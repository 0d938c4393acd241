package conduit_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
)

// A skill is listed without reading it, loaded when the agent needs it,
// and its other files read one by one, each checked against the listing.
// The policy allows loading the skill (docs/skill:NAME) and reading its
// files (docs/URI). Compiled, not run: it needs a server with skills.
func ExampleClient_LoadSkill() {
	ctx := context.Background()
	cl, err := conduit.NewClient(ctx, conduit.Server{ID: "docs", URL: "https://mcp.example.com/mcp"},
		&conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("docs/skill:pdf-processing", "docs/skill://pdf-processing/*"))})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	skills, err := cl.ListSkills(ctx, nil) // reads no skill file
	if err != nil {
		log.Print(err) // a server that failed; the others' skills are listed
	}
	for _, sk := range skills {
		loaded, err := cl.LoadSkill(ctx, sk, nil)
		if errors.Is(err, conduit.ErrSkillVerification) {
			log.Printf("skill %s is not what its listing says: %v", sk.Name, err)
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(loaded.Instructions)
	}
}
