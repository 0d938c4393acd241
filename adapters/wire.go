package adapters

import (
	"net/http"

	"github.com/conduitmcp/conduit/adapters/toolcall"
)

// Wire is how a provider's HTTP API is spoken. It is for loops that send
// the requests with their own client, since conduit sends none. It says
// where a request goes and how it is authenticated. It says how a
// request is built. It says how a response and its answers join the
// conversation. conduit's own agent loop (`conduit agent`) is written
// against it. So that loop works for every provider alike. Fakes of the
// APIs, for tests, are in adapters/adaptertest.
//
// Every field is set for every provider. The functions are pure and safe
// for concurrent use.
type Wire struct {
	// BaseURL is the public API's base URL. KeyEnv is the environment
	// variable that conventionally holds its key.
	BaseURL string
	KeyEnv  string
	// Endpoint returns the URL that answers a request for model under
	// base. base is BaseURL, or any compatible endpoint.
	Endpoint func(base, model string) string
	// Authorize sets the headers that carry key, none when it is empty.
	// It also sets any other the API requires.
	Authorize func(h http.Header, key string)

	// Prompt is a user message of text, as the conversation holds it.
	Prompt func(text string) map[string]any
	// Request is a request body. It holds the model, the tools as [Tools]
	// lists them, and the conversation so far.
	Request func(r toolcall.Request) map[string]any
	// Turn reads a response as one turn of the conversation. It returns
	// the items to append to it, the model's text, and whether it asked
	// for tools. It also says whether the provider paused it. Then send
	// the conversation again to let the model continue.
	Turn func(response map[string]any) (toolcall.Turn, error)
	// Answers are the items that carry a turn's answers
	// (Execution.Results) into the conversation.
	Answers func(results []map[string]any) []any
	// Stream, when set, asks for the streamed response instead. It marks
	// body, a Request's, as streamed. It returns the URL to send it to,
	// made of url, an Endpoint's. The response is server-sent events,
	// which ExecuteStream reads. Bedrock's is AWS's binary event stream
	// instead. Its messages are fed to a Stream by their :event-type and
	// payload, as conduit agent does.
	Stream func(url string, body map[string]any) string
}
