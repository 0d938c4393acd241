// Package bench holds conduit's benchmarks: the governed pipeline (policy,
// approval, hooks, validation, shaping) measured against the floor, the MCP
// Go SDK called by hand, side by side in the same run. See BENCHMARKS.md at
// the repository's root for the numbers and how to reproduce them.
//
// It is a module of its own so that the peer libraries it compares against
// (github.com/mark3labs/mcp-go) stay out of conduit's dependencies.
package bench
