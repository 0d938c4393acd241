package anthropic_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/anthropic"
	"github.com/conduitmcp/conduit/adapters/driver"
)

func TestSearchTools(t *testing.T) {
	ts := weatherTools()
	loaded := ts.Filter(conduit.SkipFiltered, func(tl *conduit.Tool) bool { return tl.Exposed == "get_weather" })
	tools := searchTools(loaded, ts, &driver.ListOptions{CacheLast: true, CacheTTL: "1h"})
	var names []any
	for _, d := range tools {
		names = append(names, d["name"])
	}
	if !reflect.DeepEqual(names, []any{"get_weather", "tool_search_tool_bm25", "get_time", "pick"}) {
		t.Fatalf("names %v", names)
	}
	if _, ok := tools[0]["defer_loading"]; ok || tools[0]["cache_control"] != nil {
		t.Errorf("the loaded tool %v", tools[0])
	}
	want := map[string]any{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25", "cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}}
	if !reflect.DeepEqual(tools[1], want) {
		t.Errorf("the search tool %v", tools[1])
	}
	for _, d := range tools[2:] {
		if d["defer_loading"] != true || d["cache_control"] != nil || d["input_schema"] == nil {
			t.Errorf("deferred %v", d)
		}
	}
	// The deferred copies leave the tools' shared definitions alone.
	for _, d := range anthropic.Driver().Tools(ts, nil) {
		if _, ok := d["defer_loading"]; ok {
			t.Errorf("Tools after SearchTools: %v", d)
		}
	}
	regex := searchTools(conduit.ToolSetOf(), ts, &driver.ListOptions{SearchRegex: true})
	if !reflect.DeepEqual(regex[0], map[string]any{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}) || len(regex) != 4 {
		t.Errorf("regex: %v", regex)
	}
	if data, err := json.Marshal(searchTools(conduit.ToolSetOf(), ts, nil)); err != nil || len(data) == 0 {
		t.Error(err)
	}
}

func TestToolsCacheTool(t *testing.T) {
	ts := weatherTools()
	tools := anthropic.Driver().Tools(ts, &driver.ListOptions{CacheLast: true, CacheTool: "get_weather"})
	for _, d := range tools {
		if (d["cache_control"] != nil) != (d["name"] == "get_weather") {
			t.Errorf("cache_control on %v", d)
		}
	}
	// A tool that is not listed marks nothing.
	for _, d := range anthropic.Driver().Tools(ts, &driver.ListOptions{CacheLast: true, CacheTool: "nope"}) {
		if d["cache_control"] != nil {
			t.Errorf("cache_control on %v", d)
		}
	}
}

// The blocks of a tool search (the documented response) are the API's:
// Parse finds only the tool_use.
func TestParseToolSearch(t *testing.T) {
	raws, err := anthropic.Driver().Parse([]byte(`{"content": [
		{"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex", "input": {"pattern": "weather"}},
		{"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "tool_search_tool_search_result",
			"tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}},
		{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}],
		"stop_reason": "tool_use"}`))
	if err != nil || len(raws) != 1 || raws[0].Name != "get_weather" || raws[0].ID != "toolu_1" {
		t.Fatalf("%v %+v", err, raws)
	}
}

// searchTools is the driver's listing for its tool search, as adapters
// asks for it past the search threshold.
func searchTools(loaded, all *conduit.ToolSet, o *driver.ListOptions) []map[string]any {
	if o == nil {
		o = &driver.ListOptions{}
	}
	l, err := anthropic.Driver().(driver.Searcher).SearchTools(loaded, all, o)
	if err != nil {
		panic(err)
	}
	return l.Tools
}
