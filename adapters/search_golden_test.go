package adapters_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchListed is what a golden file records of a search-mode listing.
type searchListed struct {
	Tools      []map[string]any             `json:"tools"`
	SearchTool string                       `json:"search_tool"`
	Deferred   []string                     `json:"deferred"`
	NullPaths  map[string][]driver.NullPath `json:"null_paths,omitempty"`
	Fallbacks  []string                     `json:"fallbacks,omitempty"`
	// Answer is a search's answer, for the listing after it.
	Answer map[string]any `json:"answer,omitempty"`
}

func recordSearch(conv *adapters.Conversation, answer map[string]any) searchListed {
	l := conv.Listing()
	np := l.NullPaths
	if len(np) == 0 {
		np = nil
	}
	return searchListed{Tools: conv.Tools(), SearchTool: l.SearchTool, Deferred: l.Deferred, NullPaths: np, Fallbacks: l.Fallbacks, Answer: answer}
}

// TestGoldenSearchTools lists the lab hub in search mode for every
// provider: conduit's search at turn 1 and after a search, and the
// provider's own where it has one.
func TestGoldenSearchTools(t *testing.T) {
	for _, p := range adapters.Providers() {
		t.Run(p.String(), func(t *testing.T) {
			hub, _, _ := labHub(t, hubOpts{})
			out := map[string]searchListed{}
			o := adapters.ConversationOptions{Listing: adapters.ListingOptions{CacheLast: true},
				Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: true, AlwaysLoaded: []string{"lab/echo"}, Limit: 2}}
			conv := newConv(t, hub, p, &o)
			out["conduit_turn_1"] = recordSearch(conv, nil)
			response := script(p, scripted{id: "call_search", name: "search_tools", args: map[string]any{"query": "search the notes"}})
			exec, err := conv.Execute(context.Background(), response)
			if err != nil || exec.Errors[0] != nil {
				t.Fatal(err, exec.Errors)
			}
			out["conduit_after_search"] = recordSearch(conv, exec.Results[0])
			o.Search.Conduit = false
			if l := newConv(t, hub, p, &o); l.Listing().SearchTool != adapters.SearchToolName {
				out["native"] = recordSearch(l, nil)
				o.Search.Regex = true
				if r := newConv(t, hub, p, &o); canon(r.Tools()) != canon(l.Tools()) {
					out["native_regex"] = recordSearch(r, nil)
				}
			}
			golden(t, p, "search.golden.json", out)
		})
	}
}

// docServers are the servers the documented tool-search responses that
// name namespaces call, by file.
var docServers = map[string]map[string][]string{
	"searchdoc_tool_search.json": {"crm": {"get_customer_profile", "list_open_orders"}},
}

// TestGoldenSearchDocs runs the documented responses of a provider's own
// tool search whose calls name a namespace against servers of those ids,
// listed in search mode: the API's own items are not answered, and the
// call of a namespaced function resolves to its tool and reaches its
// server. (The Anthropic ones, doc_tool_search_*.json, name no namespace
// and run in TestGoldenDocs.)
func TestGoldenSearchDocs(t *testing.T) {
	for _, p := range adapters.Providers() {
		files, _ := filepath.Glob(filepath.Join("testdata", p.String(), "searchdoc_*.json"))
		for _, f := range files {
			name := filepath.Base(f)
			if strings.HasSuffix(name, ".golden.json") {
				continue
			}
			t.Run(p.String()+"/"+name, func(t *testing.T) {
				var servers []conduit.Server
				mu := &catalog{}
				for id, tools := range docServers[name] {
					srv := mcp.NewServer(&mcp.Implementation{Name: id, Version: "1.0.0"}, nil)
					for _, tn := range tools {
						srv.AddTool(&mcp.Tool{Name: tn, Description: "The documentation's " + tn + ".", InputSchema: obj(map[string]any{"customer_id": str}, "customer_id")},
							func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
								mu.mu.Lock()
								mu.sent = append(mu.sent, id+"/"+tn)
								mu.mu.Unlock()
								return text(tn + " " + string(req.Params.Arguments)), nil
							})
					}
					tr, _ := connect(t, srv)
					servers = append(servers, conduit.Server{ID: id, Transport: tr})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				hub, err := conduit.NewHub(ctx, servers, &conduit.Options{Policy: conduit.AllowAll()})
				if err != nil {
					t.Fatal(err)
				}
				defer hub.Close()
				conv := newConv(t, hub, p, &adapters.ConversationOptions{Search: adapters.SearchOptions{Mode: adapters.SearchOn}})
				response := readJSON(t, f)
				exec, out := execute(t, hub, p, response, &adapters.ExecOptions{ToolSet: conv.Listing().ToolSet, NullPaths: conv.Listing().NullPaths}, mu.calls)
				for i, e := range exec.Errors {
					if e != nil {
						t.Errorf("documented call %d failed: %v", i, e)
					}
				}
				if len(out.Sent) == 0 || !slices.ContainsFunc(out.Sent, func(s string) bool { return strings.HasPrefix(s, "crm/") }) {
					t.Errorf("sent %v", out.Sent)
				}
				// The conversation answers it the same way.
				exec2, err := conv.Execute(ctx, response)
				if err != nil || canon(exec2.Results) != canon(exec.Results) {
					t.Errorf("the conversation answers differently: %v", err)
				}
				golden(t, p, strings.TrimSuffix(name, ".json")+".golden.json", map[string]any{"listing": recordSearch(conv, nil), "outcome": out})
			})
		}
	}
}
