// Package driver defines the interface a provider package implements for
// package adapters. It is as gocloud.dev/blob/driver is for blob. Package
// adapters wraps each provider's Provider in its portable API. Package
// adapters/adaptertest checks that a provider conforms. Programs use
// package adapters, not this one.
//
// Capabilities only some providers have are optional interfaces. They are
// detected with a type assertion, as database/sql/driver's are:
//
//   - [Searcher]: the provider searches deferred tools itself.
//   - [Strict]: a strict mode for tool schemas, whose nulls are removed
//     before a call. [StrictSchema] converts a schema to OpenAI's strict
//     mode and [StripNulls] removes its nulls. Any driver of an API with
//     that mode uses them, and so does conduit strict.
//
// A provider can live in any module:
//
//   - Its package implements [Provider]. Its Prepare is built with
//     [Render], [Pend] and a [Writer]. So its answers are cut to the
//     result budget as every other's are.
//   - adapters.NewProvider makes it usable wherever the built-in ones are.
//   - Its tests run adaptertest.RunConformanceTests with a fake of its API.
//
// A built-in provider adds one line to adapters' list of built-ins. That
// line gives it its CLI name.
package driver

import (
	"net/http"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Provider is what every provider implements. It gives its tool
// definitions, how calls are read from a response and answered, and its
// HTTP API. The methods are pure and safe for concurrent use.
type Provider interface {
	// Name is the provider's name, as adapters.Provider.String returns
	// it.
	Name() string
	// Shapes describes the provider's listings and answers, for people.
	Shapes() Shapes
	// Tools returns ts's tools as the provider's tool definitions, in
	// ts's order. The options it has no use for are ignored.
	Tools(ts *conduit.ToolSet, o *ListOptions) []map[string]any
	// Check reports what the provider is known to reject or mishandle in
	// ts.
	Check(ts *conduit.ToolSet) []toolcall.Warning
	// Parse returns a response's tool calls as the model wrote them, in
	// order. The response is []byte, json.RawMessage, a string, a
	// map[string]any or a value that marshals to the provider's JSON. It
	// is never modified. The error is for a response that cannot be read.
	// A call that cannot be made as written is a Raw to answer, not an
	// error.
	Parse(response any) ([]toolcall.Raw, error)
	// Prepare renders the answer to one call, keyed by its id. It renders
	// res, or err when the call failed. o may be nil. The Pending's Write
	// writes the answer, within the result's budget. That happens once
	// package adapters has measured every answer of the turn.
	Prepare(c toolcall.Call, res *mcp.CallToolResult, err error, o *toolcall.AnswerOptions) Pending
	// API is the provider's HTTP API.
	API() API
}

// Pending is a call's answer rendered but not yet written. What the model
// would read of it can be measured first. So a turn's budget is shared
// among its answers before any is written. Package adapters/internal/budget
// implements it over each provider's rendering and writer. It is used by
// one goroutine at a time.
type Pending interface {
	// Tokens estimates the tokens the model reads of the whole result.
	// With limit > 0 the count may stop once it passes limit. A result
	// over limit is then some count past it.
	Tokens(limit int) int
	// Text is the whole result as text: JSON indented, images as
	// placeholders. It is kept for conduit's read tool when it is cut.
	Text() string
	// Write writes the answer, its result cut to b, and says what b did.
	// It is called once.
	Write(b toolcall.Budget) (map[string]any, toolcall.Budgeted)
}

// API is how a provider's HTTP API is spoken, for loops that send their
// own requests. adapters.Wire documents each field, and is made of it.
type API struct {
	BaseURL   string
	KeyEnv    string
	Endpoint  func(base, model string) string
	Authorize func(h http.Header, key string)
	Prompt    func(text string) map[string]any
	Request   func(r toolcall.Request) map[string]any
	Turn      func(response map[string]any) (toolcall.Turn, error)
	Answers   func(results []map[string]any) []any
	Stream    func(url string, body map[string]any) string
}

// Shapes describes, for people, what a provider's listing and answers
// look like.
type Shapes struct {
	// Tools is the shape of one tool definition.
	Tools string
	// Answers is how a turn's answers join the conversation.
	Answers string
}

// ListOptions say how tool definitions are written. Each provider uses
// those it has a use for.
type ListOptions struct {
	// CacheLast marks the end of the tool list for prompt caching.
	// CacheTTL optionally gives it a ttl. CacheTool, when set, names the
	// tool to mark instead of the last one.
	CacheLast bool
	CacheTTL  string
	CacheTool string
	// Strict is the strict-mode choice of a [Strict] provider.
	Strict StrictMode
	// SearchRegex asks a [Searcher] with a regular-expression variant of
	// its search tool for that one.
	SearchRegex bool
}

// StrictMode is the strict-mode choice of a listing. It is for providers
// with a strict mode for tool schemas (OpenAI's, see [StrictSchema]). It
// is the one type of the choice. adapters.ListingOptions takes it.
type StrictMode int

const (
	// StrictAuto sends a tool whose schema converts in strict mode. It
	// sends any other without strict mode, with its original schema.
	// adapters.Listing.Fallbacks names those. adapters.Trace.StrictFallback
	// is told of them.
	StrictAuto StrictMode = iota
	// StrictOn sends only the tools whose schema converts. The provider
	// would reject the others. They are left out and named in
	// adapters.Listing.Excluded.
	StrictOn
	// StrictOff sends every tool without strict mode, with its original
	// schema.
	StrictOff
)

// Searcher is a Provider that searches deferred tools itself. Every tool
// is sent, and the provider's search loads those the model needs.
type Searcher interface {
	// SearchTools lists loaded's tools, offered from the start. It lists
	// the provider's search tool. It lists every other tool of all,
	// deferred. Its error is a listing that cannot be made.
	SearchTools(loaded, all *conduit.ToolSet, o *ListOptions) (*SearchListing, error)
}

// SearchListing is a Searcher's listing.
type SearchListing struct {
	Tools []map[string]any
	// SearchTool is the name of the provider's search tool.
	SearchTool string
	// Warnings are what the provider is known to reject in the listing.
	Warnings []toolcall.Warning
}

// Strict is a Provider with a strict mode for tool schemas (OpenAI's).
// ListOptions.Strict chooses it. A schema made strict turns optional
// properties into required ones that may be null. The nulls the model
// sends for them must be removed before a call is sent.
type Strict interface {
	// StrictTool says what Tools (and SearchTools, for a Searcher) does
	// to t under o.
	StrictTool(t *conduit.Tool, o *ListOptions) StrictResult
	// StripNull removes from args, in place, the property at path (one of
	// a StrictResult's NullPaths) when its value is null.
	StripNull(args map[string]any, path []string)
}

// StrictResult is what a strict mode does to one tool.
type StrictResult struct {
	// Excluded reports that the tool is left out.
	Excluded bool
	// Fallback, when set, is why the tool is sent without strict mode.
	Fallback error
	// NullPaths are the paths of the properties made nullable. They are
	// the tool's, the same in every listing under a strict choice that
	// has them, and are not modified.
	NullPaths []NullPath
}

// AnyItem is the [NullPath] element that stands for every item of an array.
const AnyItem = "[]"

// NullPath is the path, from the arguments' root, of a property that
// strict mode made nullable. The model sends null for it when it means to
// leave it out. The null is removed before the call is sent. Elements are
// property names. The element [AnyItem] ("[]") stands for every item of an
// array. So the path of `tags[].note` is NullPath{"tags", "[]", "note"}.
//
// Paths are locations in the argument value, not in the schema. A property
// reached through a $ref has the path of every place the $ref is used.
// anyOf branches are transparent. Branches that share a location share
// its paths, listed once. The last element is always a property name. An
// element "[]" applied to an object names its property "[]". JSON allows
// that name. So a path means the same thing to the value, whatever branch
// of an anyOf the value took.
type NullPath []string
