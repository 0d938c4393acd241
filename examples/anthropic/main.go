// Command anthropic is the Anthropic Messages agent loop of the adapters
// spec, with net/http: the servers of an mcp.json, behind its policy, are
// offered to Claude as tools; every tool call the model makes runs through
// the policy and is answered with tool_result blocks, until Claude answers
// without tools.
//
//	ANTHROPIC_API_KEY=... go run ./examples/anthropic -config mcp.json "What is in my notes?"
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
	model := flag.String("model", "claude-sonnet-4-5", "the Claude model")
	flag.Parse()
	prompt := strings.Join(flag.Args(), " ")
	if prompt == "" {
		log.Fatal("usage: anthropic [-config mcp.json] [-model M] PROMPT")
	}
	key := os.Getenv("ANTHROPIC_API_KEY")
	if key == "" {
		log.Fatal("set ANTHROPIC_API_KEY")
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

	text, err := run(ctx, "https://api.anthropic.com", http.DefaultClient, key, *model, hub, os.Getenv("USER"), prompt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
}

// errHalted reports that the user stopped the loop from the approver.
var errHalted = errors.New("halted: a call was denied and the loop stopped")

// maxTurns bounds the requests to the model.
const maxTurns = 10

// run is the loop, over one conversation: it lists the tools once (the list
// stays byte-identical between turns, and cache_control on the last tool
// caches it as a prompt prefix), and answers each turn's tool calls, with
// the taint of the results that reached the model carried into the next.
// Past 40 tools the conversation sends them deferred with Anthropic's tool
// search tool: Claude searches and loads them on the API's side, in the
// same turn as the call of what it found, and only that call is answered.
func run(ctx context.Context, baseURL string, hc *http.Client, key, model string, src conduit.Source, user, prompt string) (string, error) {
	conv, err := adapters.NewConversation(ctx, src, adapters.Anthropic, &adapters.ConversationOptions{Listing: adapters.ListingOptions{CacheLast: true}, TurnOptions: adapters.TurnOptions{Principal: user}})
	if err != nil {
		return "", err
	}
	messages := []any{map[string]any{"role": "user", "content": prompt}}
	for range maxTurns {
		raw, err := post(ctx, hc, baseURL+"/v1/messages", key, map[string]any{
			"model":      model,
			"max_tokens": 4096,
			"tools":      conv.Tools(),
			"messages":   messages,
		})
		if err != nil {
			return "", err
		}
		var resp struct {
			Content    []map[string]any `json:"content"`
			StopReason string           `json:"stop_reason"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			return "", err
		}
		messages = append(messages, map[string]any{"role": "assistant", "content": resp.Content})
		if resp.StopReason == "pause_turn" {
			// A server tool (the tool search tool, past 40 tools) ran
			// long and the API paused the turn: sent back as it came,
			// last, it lets Claude continue. The tools stay the same.
			continue
		}
		if resp.StopReason != "tool_use" {
			return text(resp.Content), nil
		}
		exec, err := conv.Execute(ctx, raw)
		if err != nil {
			return "", err
		}
		if exec.Halted {
			return "", errHalted
		}
		// One tool_result per tool_use, in the model's order, first in
		// the next user message.
		messages = append(messages, map[string]any{"role": "user", "content": exec.Results})
	}
	return "", fmt.Errorf("no answer after %d turns", maxTurns)
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
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
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
		return nil, fmt.Errorf("anthropic: %s: %s", resp.Status, raw)
	}
	return raw, nil
}

func text(content []map[string]any) string {
	var parts []string
	for _, b := range content {
		if t, ok := b["text"].(string); ok && b["type"] == "text" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
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
