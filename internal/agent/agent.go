// Package agent runs a model's tool-calling loop against a provider's HTTP
// API, with net/http only. It follows the loops of the adapters spec:
//
//   - list the tools once (past a size, a search over them);
//   - send the conversation;
//   - run the model's tool calls through the governed pipeline, and answer
//     them;
//   - carry the taint into the next turn;
//   - send a turn the provider paused back, for the model to continue;
//   - stop when the model answers without tools, when an approver halts, or
//     after MaxTurns requests.
//
// It is the loop behind `conduit agent`. The programs under examples/ are
// the same loops written out one provider at a time.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/eventstream"
	"github.com/conduitmcp/conduit/internal/jsonv"
)

// DefaultMaxTurns is the default Options.MaxTurns.
const DefaultMaxTurns = 10

// maxBody bounds a provider response read into memory.
const maxBody = 32 << 20

// Options configure Run.
type Options struct {
	Provider adapters.Provider
	Model    string
	// BaseURL is any endpoint compatible with the provider's API; empty
	// means the provider's Wire().BaseURL.
	BaseURL string
	// APIKey is sent as the provider expects (x-api-key, a bearer token
	// or x-goog-api-key); empty sends none, for local endpoints.
	APIKey string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxTurns bounds the requests to the model (default DefaultMaxTurns).
	MaxTurns int
	// MaxTokens is Anthropic's max_tokens (default
	// toolcall.DefaultMaxTokens).
	MaxTokens int
	// TurnOptions are every turn's, as for a Conversation: the principal,
	// the calls' timeouts, each result's budget (Answers.MaxResultTokens),
	// the turn's budget, and the trace told of the listing's events.
	adapters.TurnOptions
	// Strict is the OpenAI strict-mode choice of the listing.
	Strict driver.StrictMode
	// Search says when the tools are searched instead of all listed, as for
	// a Conversation. By default they are searched past
	// adapters.DefaultSearchThreshold tools or adapters.DefaultSearchBudget
	// bytes.
	Search adapters.SearchOptions
	// CodeMode offers run_code instead of the tools (see
	// adapters.CodeModeOptions); off by default.
	CodeMode adapters.CodeModeOptions
	// Read offers the model conduit's read_result for the rest of the
	// results cut, as for a Conversation.
	Read adapters.ReadOptions
	// OnTurn, when set, is told of each turn's tool calls once they are
	// answered.
	OnTurn func(Turn)
	// NoStream asks for whole responses. By default a provider that streams
	// (Wire.Stream) is asked to. Each call then starts as soon as the model
	// has written it whole, while the rest streams in. The last turn
	// MaxTurns allows is never streamed, since its calls are not run.
	NoStream bool
	// OnText, when set, is given the text the model streams, as it comes.
	OnText func(text string)
}

// Turn is one turn's tool calls, for OnTurn.
type Turn struct {
	// N counts the requests made so far, from 1.
	N int
	// Calls are the calls as the model wrote them, one per Exec.Results.
	Calls []toolcall.Raw
	Exec  *adapters.Execution
	// Taint is the taint the calls ran with.
	Taint []string
	// Paused reports that the provider paused the turn (Anthropic's
	// pause_turn). The loop sends the conversation again, the turn as it
	// came at its end, for the model to continue.
	Paused bool
}

// Stop says why a run ended.
type Stop string

// The ways a run ends.
const (
	// StopDone: the model answered without asking for tools.
	StopDone Stop = "done"
	// StopHalted: an approver denied a call and asked to stop.
	StopHalted Stop = "halted"
	// StopMaxTurns: the model still wanted tools after MaxTurns requests, or
	// its turn was still paused. Its last calls were not run.
	StopMaxTurns Stop = "max_turns"
)

// Result is the outcome of Run.
type Result struct {
	Stop Stop `json:"stop"`
	// Text is the model's last text.
	Text string `json:"text"`
	// Turns is the number of requests made.
	Turns int `json:"turns"`
	// Taint is the servers whose output entered the conversation.
	Taint []string `json:"taint"`
	// Messages is the conversation as it would be sent next: Anthropic and
	// Chat messages, Responses input items, or Gemini contents.
	Messages []any `json:"messages"`
}

// APIError is a provider's answer with a non-2xx status.
type APIError struct {
	Provider adapters.Provider
	Status   int
	// Message is the provider's error.message, or the start of the body.
	Message string
}

// Error returns the provider, the status and the provider's message.
func (e *APIError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.Status, e.Message)
}

// Run runs the loop for prompt over src. The error reports what stopped the
// loop early: HTTP, the provider, a response the adapters cannot read. A
// halt or MaxTurns is a Result, not an error.
func Run(ctx context.Context, src conduit.Source, prompt string, o Options) (*Result, error) {
	w := o.Provider.Wire()
	if w.Endpoint == nil {
		return nil, fmt.Errorf("agent: unknown provider %v", o.Provider)
	}
	if o.Model == "" {
		return nil, errors.New("agent: no model")
	}
	if o.BaseURL == "" {
		o.BaseURL = w.BaseURL
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = DefaultMaxTurns
	}
	// One conversation for the whole run. The tool list stays byte-identical
	// between turns, which prompt caching needs. With conduit's search, it
	// only grows at its end. The taint grows with every result that reaches
	// the model.
	conv, err := adapters.NewConversation(ctx, src, o.Provider, &adapters.ConversationOptions{
		TurnOptions: o.TurnOptions,
		Listing:     adapters.ListingOptions{CacheLast: true, Strict: o.Strict, CodeMode: o.CodeMode},
		Search:      o.Search,
		Read:        o.Read,
	})
	if err != nil {
		return nil, err
	}
	res := &Result{Taint: []string{}, Messages: []any{w.Prompt(prompt)}}
	for res.Turns < o.MaxTurns {
		res.Turns++
		body := w.Request(toolcall.Request{Model: o.Model, MaxTokens: o.MaxTokens, Tools: conv.Tools(), Conversation: res.Messages})
		taint := conv.Taint()
		var resp map[string]any
		var exec *adapters.Execution // the calls' answers, when they ran while the response streamed
		var err error
		if !o.NoStream && w.Stream != nil && res.Turns < o.MaxTurns {
			resp, exec, err = postStream(ctx, o, w, body, conv)
		} else {
			resp, err = post(ctx, o, w, body)
		}
		if err != nil {
			return res, err
		}
		turn, err := w.Turn(resp)
		if err != nil {
			return res, err
		}
		res.Messages = append(res.Messages, turn.Items...)
		res.Text = turn.Text
		if !turn.ToolUse && !turn.Paused {
			res.Stop = StopDone
			return res, nil
		}
		if res.Turns == o.MaxTurns {
			break
		}
		if exec == nil {
			if exec, err = conv.Execute(ctx, resp); err != nil {
				return res, err
			}
		}
		if o.OnTurn != nil {
			raws, _ := o.Provider.Parse(resp)
			o.OnTurn(Turn{N: res.Turns, Calls: raws, Exec: exec, Taint: taint, Paused: turn.Paused})
		}
		if len(exec.Results) == 0 {
			if turn.Paused {
				// The paused turn, now last in the conversation, is
				// sent back as it came: the model continues it.
				continue
			}
			// Anthropic said tool_use but sent no tool_use block.
			res.Stop = StopDone
			return res, nil
		}
		res.Taint = jsonv.NonNil(conv.Taint())
		if exec.Halted {
			res.Stop = StopHalted
			return res, nil
		}
		res.Messages = append(res.Messages, w.Answers(exec.Results)...)
	}
	res.Stop = StopMaxTurns
	return res, nil
}

func post(ctx context.Context, o Options, w adapters.Wire, body map[string]any) (map[string]any, error) {
	resp, err := send(ctx, o, w, w.Endpoint(o.BaseURL, o.Model), body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return decode(o, resp)
}

// send posts body to url with the provider's headers.
func send(ctx context.Context, o Options, w adapters.Wire, url string, body map[string]any) (*http.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	w.Authorize(req.Header, o.APIKey)
	resp, err := o.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Provider, err)
	}
	return resp, nil
}

// postStream asks for the streamed response and runs its calls through conv
// as they complete. An endpoint may answer with a whole JSON body instead.
// That body is read as post reads it, and its calls are not run.
func postStream(ctx context.Context, o Options, w adapters.Wire, body map[string]any, conv *adapters.Conversation) (map[string]any, *adapters.Execution, error) {
	resp, err := send(ctx, o, w, w.Stream(w.Endpoint(o.BaseURL, o.Model), body), body)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	binary := strings.HasPrefix(ct, "application/vnd.amazon.eventstream")
	if resp.StatusCode/100 != 2 || !(strings.HasPrefix(ct, "text/event-stream") || binary) {
		m, err := decode(o, resp)
		return m, nil, err
	}
	s, err := conv.NewStream(ctx, &adapters.StreamOptions{Text: o.OnText})
	if err != nil {
		return nil, nil, err
	}
	if binary {
		feedEventStream(s, resp.Body)
	} else {
		s.ReadFrom(resp.Body)
	}
	st, err := s.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: the stream: %w", o.Provider, err)
	}
	return st.Response, st.Execution, nil
}

// feedEventStream feeds a Stream the messages of AWS's binary event stream
// (Bedrock's ConverseStream). Each goes by its type and payload. An
// exception goes as an event of its type, which ends the stream with its
// message. A message that cannot be read ends the stream, and Close reports
// it as interrupted.
func feedEventStream(s *adapters.Stream, r io.Reader) {
	for {
		m, err := eventstream.Read(r, maxBody)
		if err != nil {
			return
		}
		typ, _ := m.Type()
		if s.Feed(adapters.StreamEvent{Name: typ, Data: m.Payload}) != nil {
			return
		}
	}
}

// decode reads a whole response's JSON body, or its error.
func decode(o Options, resp *http.Response) (map[string]any, error) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the response: %w", o.Provider, err)
	}
	var m map[string]any
	jerr := json.Unmarshal(raw, &m)
	if resp.StatusCode/100 != 2 {
		return nil, &APIError{Provider: o.Provider, Status: resp.StatusCode, Message: errorMessage(m, raw)}
	}
	if jerr != nil || m == nil {
		return nil, fmt.Errorf("%s: the response is not a JSON object: %s", o.Provider, snippet(raw))
	}
	return m, nil
}

func errorMessage(m map[string]any, raw []byte) string {
	if e := jsonv.Object(m["error"]); e != nil {
		if msg := jsonv.String(e["message"]); msg != "" {
			return msg
		}
	}
	return snippet(raw)
}

func snippet(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}
