package adapters_test

import (
	"fmt"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/bedrock"
)

// A provider is made of a driver. A driver from another module is made a
// provider the same way, and works wherever the built-in ones do.
func ExampleNewProvider() {
	p := adapters.NewProvider(bedrock.Driver())
	fmt.Println(p, p == adapters.Bedrock)
	fmt.Println(p.Wire().Endpoint(p.Wire().BaseURL, "anthropic.claude-sonnet-4-5-v1:0"))
	// Output:
	// bedrock false
	// https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-5-v1:0/converse
}
