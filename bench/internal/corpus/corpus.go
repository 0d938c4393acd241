// Package corpus is the realistic tool corpus of the benchmarks: about a
// thousand tools over many servers, made of the real tool lists of
// @modelcontextprotocol/server-everything and server-filesystem and of
// synthetic API-style servers (issue trackers, chat, databases, cluster
// management, browsers) with nested objects, arrays of objects, $defs and
// $refs, anyOf, enums and the occasional schema OpenAI strict mode cannot
// take. Generate builds it deterministically; cmd/gencorpus writes it to
// testdata/corpus.json, which the benchmarks load.
package corpus

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Corpus is a list of servers and their tools, in configuration order.
type Corpus struct {
	Servers []Server `json:"servers"`
}

// Server is one server's id and tool list, in the shape of tools/list.
type Server struct {
	ID    string           `json:"id"`
	Tools []map[string]any `json:"tools"`
}

// ServerTools returns every server's tools as the MCP SDK decodes them,
// in order, ready for conduit.NewToolSet.
func (c *Corpus) ServerTools() ([]conduit.ServerTools, error) {
	out := make([]conduit.ServerTools, 0, len(c.Servers))
	for _, s := range c.Servers {
		tools, err := s.MCPTools()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.ID, err)
		}
		out = append(out, conduit.ServerTools{Server: s.ID, Tools: tools})
	}
	return out, nil
}

// Len is the number of tools.
func (c *Corpus) Len() int {
	n := 0
	for _, s := range c.Servers {
		n += len(s.Tools)
	}
	return n
}

// MCPTools returns a server's tools decoded as the client side of the SDK
// decodes a tools/list result (schemas as map[string]any).
func (s Server) MCPTools() ([]*mcp.Tool, error) {
	data, err := json.Marshal(s.Tools)
	if err != nil {
		return nil, err
	}
	var tools []*mcp.Tool
	if err := json.Unmarshal(data, &tools); err != nil {
		return nil, fmt.Errorf("server %s: %w", s.ID, err)
	}
	return tools, nil
}

// Load reads a corpus file.
func Load(path string) (*Corpus, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Corpus
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// Marshal encodes a corpus as Load reads it, indented, with a final newline.
func (c *Corpus) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
