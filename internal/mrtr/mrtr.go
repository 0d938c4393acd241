// Package mrtr holds the mechanics of the multi-round-trip requests of
// protocol 2026-07-28: reading a result that asks, and asking again.
package mrtr

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Requests returns what res asks of its client (protocol
// 2026-07-28). res is a server's result of tools/call, prompts/get or
// resources/read. It also returns the requestState to send back with the
// answers, and whether res asks at all. An input-required result asks. So
// does one with input requests. An empty set of them means the server
// shed load: ask again later. A result of another type never asks.
func Requests(res mcp.Result) (asks mcp.InputRequestMap, state string, ok bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r != nil && (r.NeedsInput() || r.InputRequests != nil) {
			return r.InputRequests, r.RequestState, true
		}
	case *mcp.GetPromptResult:
		if r != nil && (r.NeedsInput() || r.InputRequests != nil) {
			return r.InputRequests, r.RequestState, true
		}
	case *mcp.ReadResourceResult:
		if r != nil && (r.NeedsInput() || r.InputRequests != nil) {
			return r.InputRequests, r.RequestState, true
		}
	}
	return nil, "", false
}
