// Package config reads an MCP configuration file (mcp.json): the servers,
// in the mcpServers shape of Claude Desktop, Cursor and VS Code, an
// optional policy, and the "serve" object of conduit serve. Secrets stay
// in the environment: a value says ${env:NAME}, and errors show that in
// place of what was read. The result is plain conduit values
// ([conduit.Server], [conduit.Policy]) for NewHub and NewClient.
package config
