package driver_test

import (
	"fmt"

	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/gemini"
	"github.com/conduitmcp/conduit/adapters/openai"
)

// Each provider package's driver, and the optional capabilities package
// adapters finds in it with a type assertion.
func Example() {
	for _, d := range []driver.Provider{anthropic.Driver(), openai.ChatDriver(), openai.ResponsesDriver(), gemini.Driver()} {
		_, search := d.(driver.Searcher)
		_, strict := d.(driver.Strict)
		fmt.Printf("%s: own search %v, strict mode %v\n", d.Name(), search, strict)
	}
	// Output:
	// anthropic: own search true, strict mode false
	// openai-chat: own search false, strict mode true
	// openai-responses: own search true, strict mode true
	// gemini: own search false, strict mode false
}
