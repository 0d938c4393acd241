// Package config reads an MCP configuration file (mcp.json). It reads:
//
//   - the servers, in the mcpServers shape of Claude Desktop, Cursor and
//     VS Code;
//   - an optional policy;
//   - the "serve" object of conduit serve.
//
// Secrets stay in the environment. A value says ${env:NAME}, and errors
// show that in place of what was read. The result is plain conduit values
// ([conduit.Server], [conduit.Policy]) for NewHub and NewClient.
package config
