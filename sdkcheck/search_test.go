package sdkcheck

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"
)

// searchConv is a conversation over the kit in search mode: the
// provider's own search, or conduit's.
func searchConv(t *testing.T, k *kit, p adapters.Provider, conduitSearch, regex bool) *adapters.Conversation {
	t.Helper()
	conv, err := adapters.NewConversation(t.Context(), k.hub, p, &adapters.ConversationOptions{
		Listing: adapters.ListingOptions{CacheLast: true},
		Search: adapters.SearchOptions{Mode: adapters.SearchOn, Conduit: conduitSearch, Regex: regex,
			AlwaysLoaded: []string{serverID + "/echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

// reveal has conduit's search find tools, so that the list holds more
// than the search tool.
func reveal(t *testing.T, p adapters.Provider, conv *adapters.Conversation) {
	t.Helper()
	resp := adaptertest.FakeOf(p).Response("", toolcall.Raw{ID: "call_search", Name: "search_tools", Args: map[string]any{"query": "image text structured", "limit": 5}})
	exec, err := conv.Execute(context.Background(), resp)
	if err != nil || exec.Errors[0] != nil {
		t.Fatalf("search: %v %v", err, exec.Errors)
	}
}

// TestAnthropicSearchListing decodes the tool search listings, the
// provider's own (BM25 and regex) and conduit's, into the SDK's tool
// union: the search tool as its ToolSearchTool params, deferred tools as
// ToolParam with DeferLoading, cache_control where the SDK has it.
func TestAnthropicSearchListing(t *testing.T) {
	k := newKit(t)
	for _, regex := range []bool{false, true} {
		t.Run(fmt.Sprintf("regex=%v", regex), func(t *testing.T) {
			tools := searchConv(t, k, adapters.Anthropic, false, regex).Tools()
			sdk := decodeInto[[]anthropic.ToolUnionParam](t, "the search listing", tools, false)
			if len(sdk) != len(tools) || sdk[0].OfTool == nil || sdk[0].OfTool.DeferLoading.Valid() {
				t.Fatalf("the loaded tool: %s", canon(sdk[0]))
			}
			switch {
			case !regex && (sdk[1].OfToolSearchToolBm25_20251119 == nil || sdk[1].OfToolSearchToolBm25_20251119.CacheControl.Type == ""):
				t.Errorf("the BM25 search tool: %s", canon(sdk[1]))
			case regex && (sdk[1].OfToolSearchToolRegex20251119 == nil || sdk[1].OfToolSearchToolRegex20251119.CacheControl.Type == ""):
				t.Errorf("the regex search tool: %s", canon(sdk[1]))
			}
			for i, u := range sdk[2:] {
				if u.OfTool == nil || !u.OfTool.DeferLoading.Valid() || !u.OfTool.DeferLoading.Value || u.OfTool.CacheControl.Type != "" {
					t.Errorf("deferred tool %d: %s", i, canon(u))
				}
			}
		})
	}
	conv := searchConv(t, k, adapters.Anthropic, true, false)
	reveal(t, adapters.Anthropic, conv)
	sdk := decodeInto[[]anthropic.ToolUnionParam](t, "conduit's search listing", conv.Tools(), false)
	for i, u := range sdk {
		if u.OfTool == nil || (u.OfTool.CacheControl.Type != "") != (u.OfTool.Name == "search_tools") {
			t.Errorf("tool %d: %s", i, canon(u))
		}
	}
}

// TestResponsesSearchListing decodes the Responses tool search listing
// into the SDK's ToolUnionParam: tool_search, and namespaces whose
// functions carry defer_loading.
func TestResponsesSearchListing(t *testing.T) {
	k := newKit(t)
	tools := searchConv(t, k, adapters.OpenAIResponses, false, false).Tools()
	sdk := decodeInto[[]responses.ToolUnionParam](t, "the search listing", tools, false)
	if sdk[0].OfFunction == nil || sdk[1].OfToolSearch == nil {
		t.Fatalf("the loaded function and tool_search: %s", canon(sdk[:2]))
	}
	ns := sdk[2].OfNamespace
	if len(sdk) != 3 || ns == nil || ns.Name != serverID || ns.Description == "" {
		t.Fatalf("the namespace: %s", canon(sdk[2:]))
	}
	for i, f := range ns.Tools {
		if f.OfFunction == nil || !f.OfFunction.DeferLoading.Valid() || !f.OfFunction.DeferLoading.Value {
			t.Errorf("function %d: %s", i, canon(f))
		}
		if name := f.OfFunction.Name; len(name) > len(serverID)+2 && name[:len(serverID)+2] == serverID+"__" {
			t.Errorf("function %d keeps its server prefix in its namespace: %s", i, name)
		}
	}
	// A response with a tool search and a call of a function in the
	// namespace, decoded by the SDK and passed by value, resolves to the
	// exposed name, and the server receives it.
	body := []byte(`{"id": "resp_1", "object": "response", "created_at": 1772668800, "status": "completed", "model": "gpt-5.4", "output": [
		{"type": "tool_search_call", "id": "tsc_1", "call_id": null, "execution": "server", "status": "completed", "arguments": {"query": "echo"}},
		{"type": "tool_search_output", "id": "tso_1", "call_id": null, "execution": "server", "status": "completed", "tools": []},
		{"type": "function_call", "id": "fc_1", "call_id": "call_1", "namespace": "` + serverID + `", "name": "echo", "arguments": "{\"text\":\"hi\"}", "status": "completed"}]}`)
	var r responses.Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Output[2].Namespace != serverID {
		t.Fatalf("the SDK reads the namespace as %q", r.Output[2].Namespace)
	}
	conv := searchConv(t, k, adapters.OpenAIResponses, false, false)
	exec, err := conv.Execute(t.Context(), r)
	if err != nil || len(exec.Calls) != 1 || exec.Errors[0] != nil || exec.Calls[0].Name != serverID+"__echo" {
		t.Fatalf("%v %+v %v", err, exec.Calls, exec.Errors)
	}
	if got := k.receivedBy("echo"); len(got) != 1 || got[0] != `{"text":"hi"}` {
		t.Errorf("the server received %v", got)
	}
	out := decodeInto[responses.ResponseInputItemFunctionCallOutputParam](t, "the answer", exec.Results[0], false)
	if out.CallID.Value != "call_1" {
		t.Errorf("the answer is keyed by %q", out.CallID.Value)
	}
}

// TestSearchToolsDefinitions decodes conduit's search_tools, and what
// follows it once found, into each SDK's function type.
func TestSearchToolsDefinitions(t *testing.T) {
	k := newKit(t)
	for _, p := range []adapters.Provider{adapters.OpenAIChat, adapters.OpenAIResponses, adapters.Gemini} {
		t.Run(p.String(), func(t *testing.T) {
			conv := searchConv(t, k, p, true, false)
			reveal(t, p, conv)
			tools := conv.Tools()
			if len(tools) < 3 {
				t.Fatalf("%d tools", len(tools))
			}
			switch p {
			case adapters.OpenAIChat:
				sdk := decodeInto[[]oa.ChatCompletionToolUnionParam](t, "conduit's search listing", tools, false)
				if fn := sdk[1].OfFunction; fn == nil || fn.Function.Name != "search_tools" || !fn.Function.Strict.Value {
					t.Errorf("search_tools: %s", canon(sdk[1]))
				}
			case adapters.OpenAIResponses:
				sdk := decodeInto[[]responses.ToolUnionParam](t, "conduit's search listing", tools, false)
				if fn := sdk[1].OfFunction; fn == nil || fn.Name != "search_tools" {
					t.Errorf("search_tools: %s", canon(sdk[1]))
				}
			case adapters.Gemini:
				decls := decodeInto[[]*genai.FunctionDeclaration](t, "conduit's search listing", tools, true)
				if decls[1].Name != "search_tools" || decls[1].ParametersJsonSchema == nil {
					t.Errorf("search_tools: %s", canon(decls[1]))
				}
			}
		})
	}
}
