// Package sdkcheck checks conduit's provider payloads against the official
// provider SDKs' own Go types, so that a wrong field name fails a test. It
// holds tests only, in a module of its own, so that the core module never
// depends on a provider SDK.
//
// Against an in-process MCP server, the tests decode every tool definition
// and every answer conduit emits into the SDKs' param types
// (github.com/anthropics/anthropic-sdk-go/v2, github.com/openai/openai-go/v3
// and its responses package, google.golang.org/genai), marshal them back and
// compare the JSON, since the SDKs drop unknown fields silently; they feed
// the SDKs' response structs, decoded from documented example responses, to
// adapters.ExecuteToolCalls by value and by pointer; and they build the next
// turn's request params from conduit's output. Nothing calls a provider API.
//
// Run them with:
//
//	cd sdkcheck && go vet ./... && go test -race -count=1 ./...
package sdkcheck
