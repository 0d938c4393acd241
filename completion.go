package conduit

import (
	"context"
	"fmt"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Completion (completion/complete) of a prompt's or resource's
// arguments, governed as the prompt or resource it refers to.

// Complete asks the server of params.Ref for completions
// (completion/complete): a prompt named by its exposed name, or a
// resource or resource template by its URI, each as listed for opts'
// principal and taint. The policy governs it as it governs the prompt or
// resource: what it denies is refused; an "ask" is not asked about, since
// a completion runs nothing. Params are not modified. The values are the
// server's output: a caller that keeps a taint (as package gateway does
// for each session) counts an answer with values as the output of the
// reference's server; conduit's own empty answer, for a server that
// offers no completions, is nobody's.
func (g *governed) Complete(ctx context.Context, params *mcp.CompleteParams, opts *CallOptions) (*mcp.CompleteResult, error) {
	return g.c.complete(ctx, params, opts)
}

func (c *core) complete(ctx context.Context, params *mcp.CompleteParams, opts *CallOptions) (*mcp.CompleteResult, error) {
	o := callOptions(opts)
	var exposed string
	if params != nil && params.Ref != nil {
		exposed = params.Ref.Name
		if params.Ref.Type == "ref/resource" {
			exposed = params.Ref.URI
		}
	}
	r := newRequest(methodComplete, o, "", exposed)
	r.noAsk, r.startMeta = true, o.Meta
	if len(r.startMeta) == 0 && params != nil {
		r.startMeta = params.Meta
	}
	var p mcp.CompleteParams
	var res *mcp.CompleteResult
	r.resolve = func(ctx context.Context) error {
		if params == nil || params.Ref == nil {
			return newError(ErrInvalidArguments, "", "", "A completion needs a reference to a prompt or a resource.", nil)
		}
		p = *params
		ref := *params.Ref
		p.Ref = &ref
		call := r.call
		switch ref.Type {
		case "ref/prompt":
			ps, err := c.listPromptsAs(ctx, listFor{principal: call.Principal, resolve: true})
			if err != nil {
				return listingError(ctx, err)
			}
			pr, ok := ps.Lookup(ref.Name)
			if !ok {
				return unknownPromptError(ref.Name)
			}
			call.Method, call.Server, call.Tool, call.Exposed = methodGetPrompt, pr.Server, pr.Name, pr.Exposed
			ref.Name = pr.Name
		case "ref/resource":
			rs, err := c.listResourcesAs(ctx, listFor{principal: call.Principal, resolve: true})
			if err != nil {
				return listingError(ctx, err)
			}
			server, err := rs.route(ref.URI, true)
			if err != nil {
				return err
			}
			call.Method, call.Server, call.Tool, call.Exposed = methodReadResource, server, ref.URI, ref.URI
		default:
			return newError(ErrInvalidArguments, "", "", fmt.Sprintf("Unknown completion reference type %q.", ref.Type), nil)
		}
		return nil
	}
	r.do = func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error {
		if capabilities(sess).Completions == nil {
			// Nothing to complete with: the empty answer, as the spec's.
			r.info.unsent()
			res = &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
			return nil
		}
		if len(meta) > 0 {
			// The trace's keys over those of params' own _meta.
			merged := make(mcp.Meta, len(p.Meta)+len(meta))
			maps.Copy(merged, p.Meta)
			maps.Copy(merged, meta)
			p.Meta = merged
		}
		var err error
		res, err = sess.Complete(ctx, &p)
		return err
	}
	if _, err := c.run(ctx, r); err != nil {
		return nil, err
	}
	return res, nil
}
