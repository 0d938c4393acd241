package adapters

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"

	"github.com/conduitmcp/conduit"
)

// ConversationOptions configure a [Conversation]. The zero value is fine.
type ConversationOptions struct {
	// ToolSet, when set, is offered instead of the source's listing.
	ToolSet *conduit.ToolSet
	// TurnOptions are every turn's: the calls' options, how answers are
	// written, and each turn's bounds. Principal is who the conversation
	// is for. Taint is the taint it starts with. Trace and Logger are
	// told of the listing's events too.
	TurnOptions
	// Listing says how the tools are written for the provider.
	Listing ListingOptions
	// Search says when and how the conversation offers tool search
	// instead of every tool (see SearchOptions). By default that is past
	// DefaultSearchThreshold tools or DefaultSearchBudget bytes.
	Search SearchOptions
	// State says how the conversation's state is saved and resumed in
	// another process. It also says how a resumed turn's calls are kept
	// from being sent twice (see [Conversation.State] and [ResumeConversation]).
	State StateOptions
	// Read, when On, keeps the whole of each result its budget cut. It
	// offers conduit's read_result, with which the model reads the rest.
	// Off by default (see ReadOptions).
	Read ReadOptions
}

// Conversation is one conversation with a model over one source and one
// provider. An agent loop is two calls a turn: Tools for the request and
// Execute for the answers. It carries what would otherwise be threaded by
// hand from turn to turn:
//
//   - the tool set the model was offered;
//   - strict mode's null paths;
//   - the principal;
//   - the taint.
//
// The tool set is listed once. So the tool list is byte-identical
// between turns, and prompt caching works.
//
// After Execute, the servers whose output reached the model are in the
// taint of every later turn. Output means results, isError results and
// servers' error messages. So Tainted policy rules react to them. Some
// calls add nothing: those denied, halted, never sent, timed out, or
// whose server was unavailable.
//
// Past a size (ConversationOptions.Search), a Conversation offers tool
// search instead of every tool. It uses the provider's own search where
// it has one. There every tool is sent deferred, and the list never
// changes. Otherwise it offers conduit's search_tools, which the
// Conversation answers itself. Its finds join the list of the next turn,
// after everything offered before.
//
// A turn whose calls an approver deferred is kept until Resume decides
// them. State saves the conversation, that turn included.
// ResumeConversation carries it on in another process. See
// [StateOptions] for what is guaranteed of the calls decided.
//
// A Conversation is safe for concurrent use. Still, a conversation's
// turns are sequential by nature. Concurrent Execute calls each run with
// the taint as it was when they began. Each adds its own when it ends.
// Of those that leave calls pending, only the first can be resumed. The
// others return their Execution with an error matching ErrTurnPending.
type Conversation struct {
	src    conduit.Source
	p      Provider
	search *searcher // conduit's own search, when offered

	// id names the conversation in its claims (StateOptions.Claims). base
	// is the tool set it was listed from, which it offers or searches.
	// listTaint is the taint it was listed with. Its state records these.
	id        string
	base      *conduit.ToolSet
	listTaint []string
	state     stateConfig

	// resumeMu lets one Resume run at a time.
	resumeMu sync.Mutex

	mu      sync.Mutex
	o       ExecOptions // ToolSet and NullPaths change as search reveals tools
	listing *Listing
	taint   []string
	// turns counts the turns executed. turn is the last one while calls
	// of it are pending.
	turns int
	turn  *pausedTurn
}

// NewConversation lists src's tools for provider p and the options'
// principal and taint. With the options' ToolSet, it takes that instead.
// It returns the conversation that offers them, or search over them. o
// may be nil.
func NewConversation(ctx context.Context, src conduit.Source, p Provider, o *ConversationOptions) (*Conversation, error) {
	if _, err := p.valid(); err != nil {
		return nil, err
	}
	if o == nil {
		o = &ConversationOptions{}
	}
	ts := o.ToolSet
	if ts == nil {
		var err error
		if ts, err = src.ListToolsFor(ctx, &conduit.ListOptions{Principal: o.Principal, Taint: o.Taint}); err != nil {
			return nil, err
		}
	}
	return newConversation(ctx, src, p, ts, o, rand.Text())
}

// newConversation is the conversation with id over ts, listed as o says.
// It is a new one, or one restored from its state.
func newConversation(ctx context.Context, src conduit.Source, p Provider, ts *conduit.ToolSet, o *ConversationOptions, id string) (*Conversation, error) {
	d, err := p.valid()
	if err != nil {
		return nil, err
	}
	sc, err := o.State.config(src)
	if err != nil {
		return nil, err
	}
	c := &Conversation{src: src, p: p, taint: slices.Clone(o.Taint), id: id, base: ts, listTaint: slices.Clone(o.Taint), state: sc}
	c.o = ExecOptions{ToolSet: o.ToolSet, TurnOptions: o.TurnOptions}
	c.o.Taint = slices.Clone(o.Taint)
	if err := c.list(ctx, ts, d, o); err != nil {
		return nil, err
	}
	return c, nil
}

// Tools returns the tool definitions to send with the next request. They
// have the provider's shape (for Gemini, the functionDeclarations). The
// slice is the caller's. The definitions are shared and must not be
// modified. With conduit's search, the tools found so far follow those
// offered before.
func (c *Conversation) Tools() []map[string]any { return slices.Clone(c.Listing().Tools) }

// Listing returns the listing behind Tools. It holds the tool set
// offered, strict mode's report and the provider's warnings. It also
// holds the search tool and what it can find. It is shared and must not
// be modified. With conduit's search, a search that finds new tools
// replaces it with another.
func (c *Conversation) Listing() *Listing {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listing
}

// Taint returns the servers whose output has reached the model so far.
func (c *Conversation) Taint() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.taint)
}

// beginTurn starts a turn, whole or streamed: it refuses one while calls
// are pending, and counts the turn. It returns the turn's options, with
// the conversation's taint, the turn's number, and where conduit's search
// records what it reveals (nil without search).
func (c *Conversation) beginTurn(ctx context.Context) (context.Context, ExecOptions, int, *reveals, error) {
	c.mu.Lock()
	if c.turn != nil {
		c.mu.Unlock()
		return ctx, ExecOptions{}, 0, nil, ErrTurnPending
	}
	o := c.o
	o.Taint = slices.Clone(c.taint)
	c.turns++
	n := c.turns
	c.mu.Unlock()
	var rv *reveals
	if c.search != nil {
		rv = &reveals{}
		ctx = withReveals(ctx, rv)
	}
	return ctx, o, n, rv, nil
}

// Execute runs the tool calls of a response of the conversation's
// provider, as [ExecuteToolCalls] does. They run against the tool set
// the model was offered, with the conversation's taint. Then Execute
// adds to the taint the servers whose output the answers carry.
//
// The conversation answers a call of conduit's search_tools itself. It
// goes through the source's governance, as conduit/search_tools. The
// tools it finds are offered from the next turn on. They come in the
// order of the calls that found them (Execution.Revealed). With
// ReadOptions.On, a result cut to its budget is kept whole. The
// conversation then answers calls of read_result too, as
// conduit/read_result.
//
// Send Execution.Results in the next request. Wire.Answers puts them in
// the conversation. When Execution.Halted, end the loop.
//
// When calls are deferred (Execution.Pending), the turn is not complete.
// The Conversation keeps it, with the answers already produced. It also
// keeps the taint its calls ran with. [Conversation.Resume] completes
// the turn once the calls are decided. That may happen in this process,
// or in another one from [Conversation.State]. Until then Execute
// refuses another turn (ErrTurnPending).
func (c *Conversation) Execute(ctx context.Context, response any) (*Execution, error) {
	ctx, o, n, rv, err := c.beginTurn(ctx)
	if err != nil {
		return nil, err
	}
	exec, err := ExecuteToolCalls(ctx, c.src, c.p, response, &o)
	if err != nil {
		return nil, err
	}
	if rv != nil {
		exec.Revealed = c.reveal(ctx, rv.inOrder(exec.Errors))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addTaint(exec.Taint(nil))
	if !exec.Complete() {
		if c.turn != nil {
			// A concurrent Execute left calls pending first.
			return exec, fmt.Errorf("%w: the calls deferred by this one cannot be resumed", ErrTurnPending)
		}
		c.turn = newPausedTurn(n, o.Taint, exec)
	}
	return exec, nil
}

// addTaint adds servers to the taint. The caller holds mu.
func (c *Conversation) addTaint(servers []string) {
	for _, s := range servers {
		if !slices.Contains(c.taint, s) {
			c.taint = append(c.taint, s)
		}
	}
}
