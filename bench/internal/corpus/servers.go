package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ServersDir is where the real servers' tool lists live, relative to the
// bench module's root: one ID.json per server, as tools/list returned it,
// and index.json (see its README.md and cmd/captools).
const ServersDir = "testdata/servers"

// IndexEntry is one server of index.json: where its tool list came from.
type IndexEntry struct {
	ID       string `json:"id"`
	Package  string `json:"package"`
	Version  string `json:"version"`
	Captured string `json:"captured"`
	Tools    int    `json:"tools"`
	Server   string `json:"server,omitempty"`
	// Source, for a list not captured from npm, says where it was read.
	Source string `json:"source,omitempty"`
}

// LoadServers reads the real tool lists in dir (index.json and one file
// per server), in the index's order, and checks each count against the
// index.
func LoadServers(dir string) (*Corpus, []IndexEntry, error) {
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, nil, err
	}
	var index []IndexEntry
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, nil, fmt.Errorf("index.json: %w", err)
	}
	c := &Corpus{}
	for _, e := range index {
		data, err := os.ReadFile(filepath.Join(dir, e.ID+".json"))
		if err != nil {
			return nil, nil, err
		}
		var list struct {
			Tools []map[string]any `json:"tools"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			return nil, nil, fmt.Errorf("%s.json: %w", e.ID, err)
		}
		if len(list.Tools) != e.Tools {
			return nil, nil, fmt.Errorf("%s.json lists %d tools, index.json says %d", e.ID, len(list.Tools), e.Tools)
		}
		c.Servers = append(c.Servers, Server{ID: e.ID, Tools: list.Tools})
	}
	return c, index, nil
}
