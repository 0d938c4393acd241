package adapters_test

import (
	"context"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// stateKeys is the application's key for saved conversations: from its
// secrets store in a real one, at least 32 bytes.
var stateKeys = [][]byte{[]byte("an example key, at least 32 bytes long")}

// A web application: the model's turn runs in one HTTP request, and an
// ask is deferred rather than waited for; the state is saved, and the
// person's answer, on a later request (perhaps on another instance),
// resumes it and completes the turn.
func ExampleResumeConversation() {
	ctx := context.Background()
	hub := weatherHubApproving(conduit.NewPolicy(conduit.Allow("weather/get_*"), conduit.Ask("weather/*")),
		conduit.DeferAll("waiting for the user"))
	defer hub.Close()
	opts := &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Principal: "ada"}, State: adapters.StateOptions{Keys: stateKeys}}

	// The first request: the model's response, as the API sent it.
	response := adaptertest.FakeOf(adapters.Anthropic).Response("",
		toolcall.Raw{ID: "toolu_1", Name: "weather__get_forecast", Args: map[string]any{"city": "Oslo"}},
		toolcall.Raw{ID: "toolu_2", Name: "weather__set_alert", Args: map[string]any{"city": "Oslo"}})
	conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, opts)
	if err != nil {
		log.Fatal(err)
	}
	exec, err := conv.Execute(ctx, response)
	if err != nil {
		log.Fatal(err)
	}
	if !exec.Complete() {
		state, err := conv.State() // save it with the chat; show exec.Pending to the user
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range exec.Pending {
			fmt.Println("asks:", p.ID, p.Name, p.Arguments)
		}

		// A later request: the user approved.
		conv, err = adapters.ResumeConversation(ctx, hub, adapters.Anthropic, state, opts)
		if err != nil {
			log.Fatal(err)
		}
		exec, err = conv.Resume(ctx, map[string]adapters.Ruling{"toolu_2": {Allow: true}})
		if err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("complete:", exec.Complete())
	for _, r := range exec.Results {
		fmt.Println(r["tool_use_id"], r["content"].([]any)[0].(map[string]any)["text"])
	}
	// Output:
	// asks: toolu_2 weather__set_alert map[city:Oslo]
	// complete: true
	// toolu_1 Sunny in Oslo, 22°C.
	// toolu_2 alert set
}

// Resume in the same process, with a denial: the model reads the reason.
func ExampleConversation_Resume() {
	ctx := context.Background()
	hub := weatherHubApproving(conduit.NewPolicy(conduit.Ask("weather/*")), conduit.DeferAll("waiting"))
	defer hub.Close()
	conv, err := adapters.NewConversation(ctx, hub, adapters.OpenAIChat, nil)
	if err != nil {
		log.Fatal(err)
	}
	exec, err := conv.Execute(ctx, adaptertest.FakeOf(adapters.OpenAIChat).Response("",
		toolcall.Raw{ID: "call_1", Name: "weather__set_alert", Args: `{"city":"Oslo"}`}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(exec.Pending), exec.Results[0] == nil)
	exec, err = conv.Resume(ctx, map[string]adapters.Ruling{"call_1": {Reason: "no alerts today"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(exec.Results[0]["content"])
	// Output:
	// 1 true
	// Error: The call to weather__set_alert was denied: no alerts today.
}

// What waits in a saved state, read without connecting to anything: for
// the page that asks the user.
func ExampleReadState() {
	ctx := context.Background()
	hub := weatherHubApproving(conduit.NewPolicy(conduit.Ask("weather/*")), conduit.DeferAll("waiting for the user"))
	defer hub.Close()
	conv, err := adapters.NewConversation(ctx, hub, adapters.Gemini, &adapters.ConversationOptions{
		State: adapters.StateOptions{Keys: stateKeys}, TurnOptions: adapters.TurnOptions{Principal: "ada"}})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := conv.Execute(ctx, adaptertest.FakeOf(adapters.Gemini).Response("",
		toolcall.Raw{Name: "weather__set_alert", Args: map[string]any{"city": "Oslo"}})); err != nil {
		log.Fatal(err)
	}
	state, err := conv.State()
	if err != nil {
		log.Fatal(err)
	}
	saved, err := adapters.ReadState(state, &adapters.StateOptions{Keys: stateKeys})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range saved.Pending {
		fmt.Printf("%s asks to call %s %v (%s: %s)\n", saved.Principal, p.Name, p.Arguments, p.Rule, p.Reason)
	}
	// Output:
	// ada asks to call weather__set_alert map[city:Oslo] (ask weather/*: waiting for the user)
}
