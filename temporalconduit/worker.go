// A worker's side. It holds the worker's options and registers conduit's
// activities over the source it holds. It also finds the tool set an offer
// stands for.

package temporalconduit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/store"
	"go.temporal.io/sdk/activity"
)

// The activities' names are recorded in every history that schedules them.
// Renaming one breaks the replay of the workflows that ran it.
const (
	activityListTools = "conduit.ListTools"
	activityPlan      = "conduit.Plan"
	activityCallTool  = "conduit.CallTool"
	activityPollTask  = "conduit.PollTask"
)

// DefaultClaimTTL is Options.ClaimTTL's default, as long as a saved
// conversation state lives (adapters.DefaultStateTTL).
const DefaultClaimTTL = adapters.DefaultStateTTL

// DefaultMaxAnswerBytes is Options.MaxAnswerBytes' default: 1 MiB. That is
// under Temporal's limit of 2 MB on one payload of the history.
const DefaultMaxAnswerBytes = 1 << 20

// Options configure conduit's activities on a worker ([Register]). A nil
// *Options, and the zero value of each field, mean the defaults. Every
// worker of a task queue should be given the same.
type Options struct {
	// Claims keep every call from being sent twice, by any worker. An
	// activity claims its call before it runs the pipeline, and records the
	// answer after (see the package doc). Nil means the source's store
	// (conduit.Options.Store of the Hub or Client). Give every worker the
	// same shared store (store/redisstore's). A claim in a store of one
	// process holds in that worker only. The default store.Memory is such a
	// store. A call is then given one attempt, never retried.
	Claims store.Claims
	// ClaimTTL is how long a call's claim, and the answer recorded with it,
	// are kept (default DefaultClaimTTL). A call retried after its claim
	// expired can be sent again. So keep it longer than an activity can be
	// retried. Keep it longer than any workflow reset you may make, too.
	ClaimTTL time.Duration
	// Trusted are the servers (ids) whose tools' annotations are believed.
	// MCP says they are hints, not to be trusted from servers one does not
	// control. A call of a tool with readOnlyHint is retried freely, without
	// a claim. One with idempotentHint is sent again when a lost worker left
	// its outcome unknown. Servers not named here get at most once.
	Trusted []string
	// Listing says how the tools are written for the model (strict mode,
	// cache marks). Calls are read with the same listing.
	Listing adapters.ListingOptions
	// Answers says how answers are written.
	Answers toolcall.AnswerOptions
	// Limits bound each model response (see adapters.ResponseLimits).
	Limits adapters.ResponseLimits
	// MaxAnswerBytes is the largest answer kept in the workflow's history,
	// in bytes of its JSON (default DefaultMaxAnswerBytes). A bigger one is
	// replaced by an error answer that says so (conduit.ErrLimit). The call
	// was made. Bound results below it with the hub's limits.
	MaxAnswerBytes int
}

// Activities are conduit's activities on one worker. They run over the
// source the worker holds for its lifetime. So its servers are connected
// once, not per activity. Make them with [Register]. They are safe for
// concurrent use.
type Activities struct {
	src     conduit.Source
	o       Options
	claims  store.Claims
	shared  bool // claims are seen by every worker
	trusted map[string]bool
}

// ActivityRegistry is where Register registers the activities: a
// worker.Worker, or a test suite's environment
// (testsuite.TestWorkflowEnvironment).
type ActivityRegistry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// storer is a Source that keeps a store.Store, as a Hub and a Client do.
type storer interface{ Store() store.Store }

// Register registers conduit's activities, over src, on r. They list the
// tools for a provider and read a model response's calls. They send each
// call through src's governed pipeline. The worker holds src. Make it
// (conduit.NewHub) before the worker runs and close it after. o may be nil.
//
// It returns the Activities. The application's model activity calls their
// Tools method for the tool definitions of its request.
func Register(r ActivityRegistry, src conduit.Source, o *Options) (*Activities, error) {
	if src == nil {
		return nil, errors.New("temporalconduit: Register needs a source")
	}
	a := &Activities{src: src, trusted: map[string]bool{}}
	if o != nil {
		a.o = *o
	}
	if a.o.ClaimTTL == 0 {
		a.o.ClaimTTL = DefaultClaimTTL
	}
	if a.o.ClaimTTL < 0 {
		return nil, fmt.Errorf("temporalconduit: Options.ClaimTTL is negative (%v)", a.o.ClaimTTL)
	}
	if a.o.MaxAnswerBytes <= 0 {
		a.o.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	a.claims = a.o.Claims
	if a.claims == nil {
		s, ok := src.(storer)
		if !ok {
			return nil, errors.New("temporalconduit: the source keeps no store; give Options.Claims")
		}
		a.claims = s.Store()
	}
	_, inMemory := a.claims.(*store.Memory)
	a.shared = !inMemory
	for _, s := range a.o.Trusted {
		a.trusted[s] = true
	}
	r.RegisterActivityWithOptions(a.listTools, activity.RegisterOptions{Name: activityListTools})
	r.RegisterActivityWithOptions(a.plan, activity.RegisterOptions{Name: activityPlan})
	r.RegisterActivityWithOptions(a.callTool, activity.RegisterOptions{Name: activityCallTool})
	r.RegisterActivityWithOptions(a.pollTask, activity.RegisterOptions{Name: activityPollTask})
	return a, nil
}

// Tools returns the tool definitions of an offer (Conversation.Offer) in its
// provider's shape. They are for the request the application's model
// activity sends. They are the tools of the worker's source that the offer
// names with the same definition. They come in the offer's order, written as
// Options.Listing says. A tool is left out when its server is down here. It
// is also left out when its definition changed since it was offered.
func (a *Activities) Tools(ctx context.Context, offer Offer) ([]map[string]any, error) {
	l, _, err := a.listing(ctx, offer)
	if err != nil {
		return nil, err
	}
	return l.Tools, nil
}

// listing is the listing of offer's tools, and the worker's whole
// listing for its principal and taint.
func (a *Activities) listing(ctx context.Context, offer Offer) (*adapters.Listing, *conduit.ToolSet, error) {
	ts, all, err := a.offered(ctx, offer)
	if err != nil {
		return nil, nil, err
	}
	p, _ := offer.provider()
	l, err := adapters.ListToolSet(ts, p, &a.o.Listing)
	return l, all, err
}

// offered is the tool set of offer's tools, as the worker has them. A call
// resolves against it, and no provider's listing is written for it. It also
// returns the worker's whole tool set for its principal and taint.
func (a *Activities) offered(ctx context.Context, offer Offer) (ts, all *conduit.ToolSet, err error) {
	if err := offer.check(); err != nil {
		return nil, nil, fmt.Errorf("temporalconduit: invalid offer: %w", err)
	}
	all, err = a.src.ListToolsFor(ctx, &conduit.ListOptions{Principal: offer.Principal, Taint: offer.Taint})
	if err != nil {
		return nil, nil, err
	}
	refs := make(map[string]ToolRef, len(offer.Tools))
	for _, r := range offer.Tools {
		refs[r.Exposed] = r
	}
	// The listing's order is the offer's: servers in configuration order,
	// tools sorted within each. It is the same on every worker.
	ts = all.Filter(conduit.SkipPinChanged, func(t *conduit.Tool) bool {
		r, ok := refs[t.Exposed]
		return ok && r.Server == t.Server && r.Tool == t.Name && r.Digest == t.Digest()
	})
	return ts, all, nil
}

// offerOf is the offer of a listing for principal and taint.
func offerOf(p adapters.Provider, principal string, taint []string, ts *conduit.ToolSet) Offer {
	o := Offer{Provider: p.String(), Principal: principal, Taint: slices.Clone(taint), Tools: make([]ToolRef, 0, ts.Len())}
	for t := range ts.All() {
		if dg := t.Digest(); dg != "" {
			o.Tools = append(o.Tools, ToolRef{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Digest: dg})
		}
	}
	return o
}
