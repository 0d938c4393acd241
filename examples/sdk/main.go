// Command sdk is the OpenAI Chat Completions agent loop written with the
// official Go SDK, github.com/openai/openai-go/v3, instead of net/http. It is
// a module of its own so that conduit itself never depends on a provider SDK.
//
// conduit's listing and answers are plain JSON in OpenAI's wire shape; the
// SDK's param types decode them (they implement json.Unmarshaler), and the
// SDK's response is passed to ExecuteToolCalls as it is.
//
//	OPENAI_API_KEY=... go run . -config ../../mcp.json "What is in my notes?"
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/config"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func main() {
	configPath := flag.String("config", "mcp.json", "the MCP configuration file (mcpServers and a policy)")
	model := flag.String("model", "gpt-4.1", "the OpenAI model")
	flag.Parse()
	prompt := strings.Join(flag.Args(), " ")
	if prompt == "" {
		log.Fatal("usage: sdk [-config mcp.json] [-model M] PROMPT")
	}
	if os.Getenv("OPENAI_API_KEY") == "" {
		log.Fatal("set OPENAI_API_KEY")
	}
	ctx := context.Background()
	cfg, err := config.Load(*configPath)
	if err != nil {
		log.Fatal(err)
	}
	if cfg.Policy == nil {
		log.Fatalf("%s has no policy: add one, such as \"policy\": [{\"ask\": [\"*\"]}]", *configPath)
	}
	// No approver: the policy's "ask" rules are answered as denials that
	// say approval was needed.
	hub, err := conduit.NewHub(ctx, cfg.Servers, &conduit.Options{Policy: cfg.Policy, LaxPolicy: cfg.LaxPolicy})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()

	// The SDK reads OPENAI_API_KEY itself.
	text, err := run(ctx, "https://api.openai.com/v1", http.DefaultClient, *model, hub, os.Getenv("USER"), prompt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
}

// errHalted reports that the loop was stopped from the approver.
var errHalted = errors.New("halted: a call was denied and the loop stopped")

// maxTurns bounds the requests to the model.
const maxTurns = 10

// run is the loop, through the SDK's client.
func run(ctx context.Context, baseURL string, hc *http.Client, model string, src conduit.Source, user, prompt string, opts ...option.RequestOption) (string, error) {
	client := openai.NewClient(append([]option.RequestOption{option.WithBaseURL(baseURL), option.WithHTTPClient(hc)}, opts...)...)

	conv, err := adapters.NewConversation(ctx, src, adapters.OpenAIChat, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Principal: user}})
	if err != nil {
		return "", err
	}
	var tools []openai.ChatCompletionToolUnionParam
	if err := convert(conv.Tools(), &tools); err != nil {
		return "", fmt.Errorf("tools: %w", err)
	}
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}
	for range maxTurns {
		completion, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    model,
			Tools:    tools,
			Messages: messages,
		})
		if err != nil {
			return "", err
		}
		if len(completion.Choices) == 0 {
			return "", errors.New("openai: no choices")
		}
		message := completion.Choices[0].Message
		messages = append(messages, message.ToParam())

		// The SDK's response struct goes in as it is: conduit reads it
		// through its JSON.
		exec, err := conv.Execute(ctx, completion)
		if err != nil {
			return "", err
		}
		if len(exec.Results) == 0 {
			return message.Content, nil
		}
		if exec.Halted {
			return "", errHalted
		}
		var answers []openai.ChatCompletionMessageParamUnion
		if err := convert(exec.Results, &answers); err != nil {
			return "", fmt.Errorf("tool messages: %w", err)
		}
		messages = append(messages, answers...)
	}
	return "", fmt.Errorf("no answer after %d turns", maxTurns)
}

// convert decodes conduit's JSON values into the SDK's param types.
func convert(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}
