package adapters_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
)

func ExampleSearchOptions() {
	// The policy governs conduit's search as conduit/search_tools.
	hub := weatherHubWith(conduit.NewPolicy(conduit.Allow("weather/get_*", "conduit/search_tools"), conduit.Ask("weather/*")))
	defer hub.Close()
	ctx := context.Background()

	// Search on (by default it starts past 40 tools): conduit's
	// search_tools for Gemini, the only tool at first.
	conv, err := adapters.NewConversation(ctx, hub, adapters.Gemini, &adapters.ConversationOptions{
		Search: adapters.SearchOptions{Mode: adapters.SearchOn},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(toolNames(conv.Tools()), conv.Listing().Deferred)

	// The model searches; the conversation answers it, and the tool found
	// is offered from the next turn on, after what was offered before.
	response := `{"candidates": [{"content": {"role": "model", "parts": [
		{"functionCall": {"name": "search_tools", "args": {"query": "forecast"}}}]}}]}`
	exec, err := conv.Execute(ctx, response)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(exec.Results[0]["functionResponse"].(map[string]any)["response"])
	fmt.Println(toolNames(conv.Tools()))

	// A policy that does not allow conduit/search_tools: a conversation
	// with conduit's search lists every tool instead, and says why.
	strict := weatherHub()
	defer strict.Close()
	l := mustConv(adapters.NewConversation(ctx, strict, adapters.Anthropic, &adapters.ConversationOptions{
		Search: adapters.SearchOptions{Threshold: 1, Conduit: true}})).Listing()
	fmt.Println(toolNames(l.Tools), strings.Contains(l.Warnings[0].Message, "conduit/search_tools"))
	// Anthropic's own search is Anthropic's: every other tool deferred.
	own := mustConv(adapters.NewConversation(ctx, hub, adapters.Anthropic, &adapters.ConversationOptions{
		Search: adapters.SearchOptions{Mode: adapters.SearchOn, AlwaysLoaded: []string{"weather/get_*"}}}))
	for _, d := range own.Tools() {
		fmt.Println(d["name"], d["defer_loading"])
	}
	// Output:
	// [search_tools] [weather__get_forecast weather__set_alert]
	// map[output:1 tool matches "forecast"; it can be called from now on:
	// weather__get_forecast: Gets the forecast for a city.]
	// [search_tools weather__get_forecast]
	// [weather__get_forecast weather__set_alert] true
	// weather__get_forecast <nil>
	// tool_search_tool_bm25 <nil>
	// weather__set_alert true
}

func mustConv(c *adapters.Conversation, err error) *adapters.Conversation {
	if err != nil {
		log.Fatal(err)
	}
	return c
}

func ExampleParseSearchMode() {
	m, err := adapters.ParseSearchMode("on")
	fmt.Println(m, err)
	_, err = adapters.ParseSearchMode("sometimes")
	fmt.Println(err)
	// Output:
	// on <nil>
	// unknown search mode "sometimes" (auto, on, off)
}
