package conduit

import "github.com/conduitmcp/conduit/internal/names"

// validServerID reports why id cannot be a server id, or nil.
func validServerID(id string) error { return names.ServerID(id) }

// exposedName is the name a model sees: prefix+tool for a client, or
// prefix+server__tool in a hub (namespace true). The cut and hash apply to
// the whole name so that it fits names.MaxLen.
func exposedName(namespace bool, server, prefix, tool string) string {
	if namespace {
		return names.Sanitize(prefix + server + "__" + tool)
	}
	return names.Sanitize(prefix + tool)
}
