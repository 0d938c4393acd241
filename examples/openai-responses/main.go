// Command openai-responses is the OpenAI Responses agent loop of the
// adapters spec, with net/http: the servers of an mcp.json, behind its
// policy, are offered as function tools in strict mode; every function call
// the model makes runs through the policy and is answered with a
// function_call_output item, until the model answers without tools.
//
//	OPENAI_API_KEY=... go run ./examples/openai-responses -config mcp.json "What is in my notes?"
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/config"
)

func main() {
	configPath := flag.String("config", "mcp.json", "the MCP configuration file (mcpServers and a policy)")
	model := flag.String("model", "gpt-4.1", "the OpenAI model")
	flag.Parse()
	prompt := strings.Join(flag.Args(), " ")
	if prompt == "" {
		log.Fatal("usage: openai-responses [-config mcp.json] [-model M] PROMPT")
	}
	key := os.Getenv("OPENAI_API_KEY")
	if key == "" {
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
	hub, err := conduit.NewHub(ctx, cfg.Servers, &conduit.Options{Policy: cfg.Policy, LaxPolicy: cfg.LaxPolicy, Approver: askOnStdin})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()

	text, err := run(ctx, "https://api.openai.com/v1", http.DefaultClient, key, *model, hub, os.Getenv("USER"), prompt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
}

// errHalted reports that the user stopped the loop from the approver.
var errHalted = errors.New("halted: a call was denied and the loop stopped")

// maxTurns bounds the requests to the model.
const maxTurns = 10

// run is the loop, over one conversation: it lists the tools once, appends
// the output items (function calls, reasoning, messages) to the input as
// they came, and answers each turn's function calls, with the taint of the
// results that reached the model carried into the next.
func run(ctx context.Context, baseURL string, hc *http.Client, key, model string, src conduit.Source, user, prompt string) (string, error) {
	conv, err := adapters.NewConversation(ctx, src, adapters.OpenAIResponses, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Principal: user}})
	if err != nil {
		return "", err
	}
	input := []any{map[string]any{"role": "user", "content": prompt}}
	for range maxTurns {
		raw, err := post(ctx, hc, baseURL+"/responses", key, map[string]any{
			"model": model,
			"tools": conv.Tools(),
			"input": input,
		})
		if err != nil {
			return "", err
		}
		var resp struct {
			Output []map[string]any `json:"output"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			return "", err
		}
		for _, item := range resp.Output {
			input = append(input, item)
		}

		exec, err := conv.Execute(ctx, raw)
		if err != nil {
			return "", err
		}
		if len(exec.Results) == 0 {
			return outputText(resp.Output), nil
		}
		if exec.Halted {
			return "", errHalted
		}
		// One function_call_output item per call; its output is a string,
		// or input_text and input_image items when a result has an image.
		for _, r := range exec.Results {
			input = append(input, r)
		}
	}
	return "", fmt.Errorf("no answer after %d turns", maxTurns)
}

func outputText(output []map[string]any) string {
	var parts []string
	for _, item := range output {
		if item["type"] != "message" {
			continue
		}
		content, _ := item["content"].([]any)
		for _, c := range content {
			if c, ok := c.(map[string]any); ok && c["type"] == "output_text" {
				text, _ := c["text"].(string)
				parts = append(parts, text)
			}
		}
	}
	return strings.Join(parts, "\n")
}

func post(ctx context.Context, hc *http.Client, url, key string, body any) ([]byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("openai: %s: %s", resp.Status, raw)
	}
	return raw, nil
}

// askOnStdin decides the policy's "ask" rules by asking on the terminal.
func askOnStdin(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
	args, _ := json.Marshal(req.Call.Args)
	fmt.Fprintf(os.Stderr, "allow %s %s? [y/N/halt] ", req.Call.Exposed, args)
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	switch strings.TrimSpace(line) {
	case "y", "yes":
		return conduit.Approve()
	case "halt":
		return conduit.RejectAndHalt("The user stopped the agent.")
	}
	return conduit.Reject("The user denied this call.")
}
