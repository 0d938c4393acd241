// Command gemini is the Gemini generateContent agent loop of the adapters
// spec, with net/http: the servers of an mcp.json, behind its policy, are
// offered as functionDeclarations; every functionCall the model makes runs
// through the policy and is answered with a functionResponse part, until the
// model answers without calls. The Gemini adapter is experimental.
//
//	GEMINI_API_KEY=... go run ./examples/gemini -config mcp.json "What is in my notes?"
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
	model := flag.String("model", "gemini-2.5-flash", "the Gemini model")
	flag.Parse()
	prompt := strings.Join(flag.Args(), " ")
	if prompt == "" {
		log.Fatal("usage: gemini [-config mcp.json] [-model M] PROMPT")
	}
	key := os.Getenv("GEMINI_API_KEY")
	if key == "" {
		log.Fatal("set GEMINI_API_KEY")
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

	text, err := run(ctx, "https://generativelanguage.googleapis.com/v1beta", http.DefaultClient, key, *model, hub, os.Getenv("USER"), prompt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
}

// errHalted reports that the user stopped the loop from the approver.
var errHalted = errors.New("halted: a call was denied and the loop stopped")

// maxTurns bounds the requests to the model.
const maxTurns = 10

// run is the loop, over one conversation: it lists the function
// declarations once, appends the model's content as it came (thought
// signatures included), and answers each turn's function calls with a user
// content of functionResponse parts, with the taint of the results that
// reached the model carried into the next turn.
func run(ctx context.Context, baseURL string, hc *http.Client, key, model string, src conduit.Source, user, prompt string) (string, error) {
	conv, err := adapters.NewConversation(ctx, src, adapters.Gemini, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Principal: user}})
	if err != nil {
		return "", err
	}
	contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}}
	url := baseURL + "/models/" + model + ":generateContent"
	for range maxTurns {
		raw, err := post(ctx, hc, url, key, map[string]any{
			"contents": contents,
			"tools":    []any{map[string]any{"functionDeclarations": conv.Tools()}},
		})
		if err != nil {
			return "", err
		}
		var resp struct {
			Candidates []struct {
				Content map[string]any `json:"content"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal(raw, &resp); err != nil {
			return "", err
		}
		if len(resp.Candidates) == 0 || resp.Candidates[0].Content == nil {
			return "", fmt.Errorf("gemini: no candidate content in %s", raw)
		}
		content := resp.Candidates[0].Content
		contents = append(contents, content)

		exec, err := conv.Execute(ctx, raw)
		if err != nil {
			return "", err
		}
		if len(exec.Results) == 0 {
			return text(content), nil
		}
		if exec.Halted {
			return "", errHalted
		}
		parts := make([]any, len(exec.Results))
		for i, r := range exec.Results {
			parts[i] = r
		}
		contents = append(contents, map[string]any{"role": "user", "parts": parts})
	}
	return "", fmt.Errorf("no answer after %d turns", maxTurns)
}

func text(content map[string]any) string {
	var b strings.Builder
	parts, _ := content["parts"].([]any)
	for _, p := range parts {
		if p, ok := p.(map[string]any); ok && p["thought"] != true {
			s, _ := p["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
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
	req.Header.Set("x-goog-api-key", key)
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
		return nil, fmt.Errorf("gemini: %s: %s", resp.Status, raw)
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
