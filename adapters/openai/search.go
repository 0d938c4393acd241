package openai

import (
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
)

// The Responses API's tool search. The model searches the definitions of
// deferred functions ("defer_loading": true). The API loads those it
// finds, in one response:
//
//   - a tool_search_call item and a tool_search_output item;
//   - function_call items that call what was found, answered as any other.
//
// turn keeps every item, as the API wants them back. Deferred functions
// are grouped in namespaces, one per server, as OpenAI recommends. The
// model then sees only each namespace's name and description up front.

// searchToolName is the type, and so the name, of OpenAI's tool search
// tool.
const searchToolName = "tool_search"

// searchTool is the tool search tool's definition: {"type":
// "tool_search"}, searched by OpenAI.
func searchTool() map[string]any { return map[string]any{"type": searchToolName} }

// errNoToolSearch is searchTools' error for the Chat Completions API,
// which has no tool search.
var errNoToolSearch = errors.New("openai: the Chat Completions API has no tool search")

// searchTools returns a Responses tool list in which the model searches
// for the functions it needs. It lists:
//
//   - loaded's tools as list lists them, offered from the start;
//   - the tool_search tool;
//   - deferred's tools, each with "defer_loading": true, in one namespace
//     per server. The model sees them only once a search found them.
//
// A namespace is {"type": "namespace", "name": the server id,
// "description", "tools"}. In its namespace a tool of a hub is named
// without its server__ prefix, unless that name is taken. So
// github__create_issue is create_issue in namespace github. A call of it
// resolves to its exposed name (see toolcall.Resolve). A tool in both
// sets is listed once, loaded. For the Chat API, the error is errNoToolSearch.
func (api apiKind) searchTools(loaded, deferred *conduit.ToolSet, strict driver.StrictMode) ([]map[string]any, error) {
	if api != responsesAPI {
		return nil, errNoToolSearch
	}
	out := api.list(loaded, strict)
	out = append(out, searchTool())
	type namespace struct {
		name  string
		tools []map[string]any
	}
	var spaces []*namespace
	byName := map[string]*namespace{}
	for t := range deferred.All() {
		if _, ok := loaded.Lookup(t.Exposed); ok {
			continue
		}
		d := api.definition(t, strict)
		if d.def == nil {
			continue
		}
		cp := make(map[string]any, len(d.def)+1)
		for k, v := range d.def {
			cp[k] = v
		}
		cp["name"] = functionName(t, loaded, deferred)
		cp["defer_loading"] = true
		ns := byName[t.Server]
		if ns == nil {
			ns = &namespace{name: t.Server}
			byName[t.Server] = ns
			spaces = append(spaces, ns)
		}
		ns.tools = append(ns.tools, cp)
	}
	for _, ns := range spaces {
		out = append(out, map[string]any{
			"type":        "namespace",
			"name":        ns.name,
			"description": namespaceDescription(ns.name, len(ns.tools)),
			"tools":       ns.tools,
		})
	}
	return out, nil
}

// namespaceDescription is the description of a server's namespace: what
// the model reads before it searches.
func namespaceDescription(server string, tools int) string {
	if tools == 1 {
		return fmt.Sprintf("The tool of the MCP server %s.", server)
	}
	return fmt.Sprintf("The %d tools of the MCP server %s.", tools, server)
}

// functionName is the name of t in its server's namespace. It is its
// exposed name without the server__ prefix a hub gives it. The exposed
// name stays when no prefix is there. It also stays when a tool of the
// same server in any of sets is exposed under the shortened name. A call
// of it would resolve to that one instead.
func functionName(t *conduit.Tool, sets ...*conduit.ToolSet) string {
	short, ok := strings.CutPrefix(t.Exposed, t.Server+"__")
	if !ok || short == "" {
		return t.Exposed
	}
	for _, ts := range sets {
		if other, taken := ts.Lookup(short); taken && other.Server == t.Server {
			return t.Exposed
		}
	}
	return short
}
