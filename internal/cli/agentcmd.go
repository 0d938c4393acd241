package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/agent"
	"github.com/conduitmcp/conduit/internal/bounded"
)

func runAgent(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "agent", `
Run an agent loop against the provider's HTTP API: send PROMPT with the
servers' tools, run the model's tool calls through the policy, answer them,
and repeat until the model answers without tools. The taint of each turn's
results is carried into the next, so "tainted" rules apply; a halt from the
approver ends the loop. Past a size (--search auto), the model searches the
tools instead of getting them all: with the provider's own search (anthropic,
openai-responses; --conduit-search for conduit's) or conduit's search_tools,
which the policy governs as conduit/search_tools.

The API key comes from ANTHROPIC_API_KEY (anthropic), OPENAI_API_KEY
(openai-chat, openai-responses) or GEMINI_API_KEY (gemini). --base-url sends
the requests to any compatible endpoint instead (its key is optional):
  anthropic         https://api.anthropic.com            + /v1/messages
  openai-chat       https://api.openai.com/v1            + /chat/completions
  openai-responses  https://api.openai.com/v1            + /responses
  gemini            https://generativelanguage.googleapis.com/v1beta
                                                         + /models/M:generateContent

Each result the model reads is cut to --max-result-tokens, and the results
of one response together to --max-turn-tokens (shared among them); a
server's "maxResultTokens" in the configuration takes the first's place for
its tools. The whole of a cut result is kept for the run, and the model
reads the rest with conduit's read_result (by lines, bytes, or the lines
that match a pattern), which the policy governs as conduit/read_result;
--read-tool=false leaves it out, and the notice says to ask for less.

By default the model's response is streamed (bedrock's through
converse-stream): each call starts as soon as the model has written it
whole, while the rest streams in, and the answers go back in the model's
order. --stream=false asks for whole responses.

The model's last text goes to stdout (with --json, the whole result); each
call's outcome goes to stderr. The exit status is 1 when the loop was
halted, ran out of --max-turns, or the API failed.`)
	var h hubFlags
	var l listFlags
	var c callFlags
	var sf searchFlags
	var bf budgetFlags
	var cm codeModeFlags
	h.register(fs)
	l.register(fs, true)
	sf.register(fs)
	bf.register(fs, true)
	cm.register(fs)
	readTool := fs.Bool("read-tool", true, "keep the whole of each result cut, and offer the model conduit's read_result to read the rest")
	c.approve.register(fs)
	fs.DurationVar(&c.timeout, "timeout", bounded.DefaultCallTimeout, "how long one call may take in all, approval included")
	model := fs.String("model", "", "the `model` to ask, such as claude-sonnet-4-5, gpt-4.1 or gemini-2.5-flash")
	baseURL := fs.String("base-url", "", "the API's base `URL`, for any compatible endpoint (default: the provider's)")
	maxTurns := fs.Int("max-turns", agent.DefaultMaxTurns, "the most requests to the model")
	maxTokens := fs.Int("max-tokens", toolcall.DefaultMaxTokens, "anthropic: max_tokens of each request")
	stream := fs.Bool("stream", true, "ask for streamed responses and start each call as soon as it is whole (--stream=false: whole responses)")
	asJSON := fs.Bool("json", false, "print the result as JSON: stop reason, text, turns, taint and the conversation")
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	p, strict, err := l.parse(fs)
	if err != nil {
		return err
	}
	search, err := sf.parse(fs)
	if err != nil {
		return err
	}
	if *model == "" {
		return usageError("agent", "--model is required")
	}
	prompt := strings.TrimSpace(strings.Join(pos, " "))
	if prompt == "" {
		return usageError("agent", "give the prompt as the argument: conduit agent --provider %s --model %s \"what's in my notes?\"", p, *model)
	}
	if *maxTurns < 1 {
		return usageError("agent", "--max-turns must be at least 1")
	}
	key := env.Getenv(p.Wire().KeyEnv)
	if key == "" && *baseURL == "" {
		return usageError("agent", "set %s to your %s API key (or use --base-url for an endpoint that needs none)", p.Wire().KeyEnv, p)
	}
	approver, release, err := c.approve.approver("agent", env)
	if err != nil {
		return err
	}
	defer release()
	hub, _, err := h.openHub(ctx, env, nil, hubOptions{approver: approver, needPolicy: true})
	if err != nil {
		return err
	}
	defer hub.Close()

	res, err := agent.Run(ctx, hub, prompt, agent.Options{
		Provider: p, Model: *model, BaseURL: *baseURL, APIKey: key, HTTPClient: env.HTTPClient,
		MaxTurns: *maxTurns, MaxTokens: *maxTokens, Strict: strict, NoStream: !*stream,
		TurnOptions: adapters.TurnOptions{Principal: l.principal, CallTimeout: c.timeout, Trace: env.listingTrace(nil),
			Answers: toolcall.AnswerOptions{MaxResultTokens: bf.resultTokens()}, Budget: bf.options()},
		Search: search, CodeMode: cm.options(), Read: adapters.ReadOptions{On: *readTool},
		OnTurn: func(t agent.Turn) {
			if t.Paused {
				fmt.Fprintf(env.Stderr, "conduit: turn %d: paused by the provider; sent back for the model to continue\n", t.N)
			}
			if len(t.Exec.Results) > 0 || !t.Paused {
				fmt.Fprintf(env.Stderr, "conduit: turn %d: %d tool call(s)\n", t.N, len(t.Exec.Results))
			}
			reportCalls(env, t.Calls, t.Exec)
			reportRevealed(env, t.Exec)
		},
	})
	if err != nil {
		var ae *agent.APIError
		if errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403) {
			return failure("%v (check %s)", err, p.Wire().KeyEnv)
		}
		return failure("%v", err)
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, res); err != nil {
			return err
		}
	} else if res.Text != "" {
		fmt.Fprintln(env.Stdout, res.Text)
	}
	switch res.Stop {
	case agent.StopHalted:
		return failure("halted: a call was denied with a request to stop; the loop ended after %d turn(s)", res.Turns)
	case agent.StopMaxTurns:
		return failure("the model still wanted tools after %d turn(s); raise --max-turns", res.Turns)
	}
	return nil
}
