package conduit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Resource is one resource of a [ResourceSet]: the server's own
// definition, offered under its own URI. It must not be modified.
type Resource struct {
	*mcp.Resource
	Server string // the id of the server that lists it
}

// ResourceTemplate is one resource template of a [ResourceSet]. It must
// not be modified.
type ResourceTemplate struct {
	*mcp.ResourceTemplate
	Server string // the id of the server that lists it

	tmpl *uritemplate.Template
}

// Matches reports whether uri is one of the template's URIs.
func (t *ResourceTemplate) Matches(uri string) bool {
	return t.tmpl != nil && t.tmpl.Regexp().MatchString(uri)
}

// ResourceSet is the resources and resource templates of a hub's servers,
// under their own URIs. Servers are in configuration order. Within a
// server, resources are by URI and templates by URI template. A URI (or
// URI template) that two servers list is left out for both and reported.
// So a read always goes to the one server that offers it.
type ResourceSet struct {
	resources []*Resource
	byURI     map[string]*Resource
	templates []*ResourceTemplate
	skipped   []Skipped
}

// Resources yields the resources in order.
func (rs *ResourceSet) Resources() iter.Seq[*Resource] {
	return func(yield func(*Resource) bool) {
		if rs == nil {
			return
		}
		for _, r := range rs.resources {
			if !yield(r) {
				return
			}
		}
	}
}

// Templates yields the resource templates in order.
func (rs *ResourceSet) Templates() iter.Seq[*ResourceTemplate] {
	return func(yield func(*ResourceTemplate) bool) {
		if rs == nil {
			return
		}
		for _, t := range rs.templates {
			if !yield(t) {
				return
			}
		}
	}
}

// Lookup returns the resource listed under uri.
func (rs *ResourceSet) Lookup(uri string) (*Resource, bool) {
	if rs == nil {
		return nil, false
	}
	r, ok := rs.byURI[uri]
	return r, ok
}

// Skipped reports what was left out and why, in server order. Tool holds
// the URI, or the URI template.
func (rs *ResourceSet) Skipped() []Skipped {
	if rs == nil {
		return nil
	}
	return slices.Clone(rs.skipped)
}

// Server returns the id of the server that a read of uri goes to. That is
// the server listing the resource, or else the one server whose templates
// match it. The error is an *Error (ErrUnknownTool) when no server offers
// uri. So it is when templates of two servers match it.
func (rs *ResourceSet) Server(uri string) (string, error) { return rs.route(uri, false) }

// route is Server; with templateToo, uri may also be a URI template as
// listed (a completion's reference).
func (rs *ResourceSet) route(uri string, templateToo bool) (string, error) {
	if r, ok := rs.Lookup(uri); ok {
		return r.Server, nil
	}
	var servers []string
	for t := range rs.Templates() {
		if (templateToo && t.URITemplate == uri) || t.Matches(uri) {
			if !slices.Contains(servers, t.Server) {
				servers = append(servers, t.Server)
			}
		}
	}
	switch len(servers) {
	case 0:
		return "", newError(ErrUnknownTool, "", "", fmt.Sprintf("Unknown resource %q: no server offers it.", uri), nil)
	case 1:
		return servers[0], nil
	}
	return "", newError(ErrUnknownTool, "", "", fmt.Sprintf("The resource %q is ambiguous: templates of %s all match it.", uri, strings.Join(servers, ", ")), nil)
}

// serverResources is one server's resources and templates, an input of
// newResourceSet.
type serverResources struct {
	Server    string                  // the server's id
	Resources []*mcp.Resource         // as listed, in any order
	Templates []*mcp.ResourceTemplate // as listed, in any order
	// Down, when set, says why the server is unavailable.
	Down error
}

// newResourceSet builds a resource set from servers' lists, in the order
// given. Some entries are left out and reported (SkipInvalidName). They
// are a resource whose URI is not an absolute URI, and a template that is
// not a valid URI template.
func newResourceSet(servers ...serverResources) *ResourceSet {
	rs := &ResourceSet{byURI: map[string]*Resource{}}
	var resources []*Resource
	var templates []*ResourceTemplate
	for _, sr := range servers {
		if sr.Down != nil {
			rs.skipped = append(rs.skipped, downSkipped(sr.Server, sr.Down))
			continue
		}
		res := slices.DeleteFunc(slices.Clone(sr.Resources), func(r *mcp.Resource) bool { return r == nil })
		slices.SortStableFunc(res, func(a, b *mcp.Resource) int { return strings.Compare(a.URI, b.URI) })
		for i, r := range res {
			switch {
			case i > 0 && res[i-1].URI == r.URI, i+1 < len(res) && res[i+1].URI == r.URI:
				rs.skipped = append(rs.skipped, Skipped{Server: sr.Server, Tool: r.URI, Reason: SkipCollision,
					Detail: "the server listed this URI more than once; none of them is offered"})
			case !absoluteURI(r.URI):
				rs.skipped = append(rs.skipped, Skipped{Server: sr.Server, Tool: r.URI, Reason: SkipInvalidName,
					Detail: "the server listed a resource whose URI is not an absolute URI"})
			default:
				resources = append(resources, &Resource{Resource: r, Server: sr.Server})
			}
		}
		tms := slices.DeleteFunc(slices.Clone(sr.Templates), func(t *mcp.ResourceTemplate) bool { return t == nil })
		slices.SortStableFunc(tms, func(a, b *mcp.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
		for i, t := range tms {
			if (i > 0 && tms[i-1].URITemplate == t.URITemplate) || (i+1 < len(tms) && tms[i+1].URITemplate == t.URITemplate) {
				rs.skipped = append(rs.skipped, Skipped{Server: sr.Server, Tool: t.URITemplate, Reason: SkipCollision,
					Detail: "the server listed this URI template more than once; none of them is offered"})
				continue
			}
			tmpl, err := uritemplate.New(t.URITemplate)
			if err != nil || !absoluteURI(t.URITemplate) {
				rs.skipped = append(rs.skipped, Skipped{Server: sr.Server, Tool: t.URITemplate, Reason: SkipInvalidName,
					Detail: "the server listed a URI template that is not valid"})
				continue
			}
			templates = append(templates, &ResourceTemplate{ResourceTemplate: t, Server: sr.Server, tmpl: tmpl})
		}
	}
	uris := map[string][]string{}
	for _, r := range resources {
		uris[r.URI] = append(uris[r.URI], r.Server)
	}
	for _, r := range resources {
		if s := uris[r.URI]; len(s) > 1 {
			rs.skipped = append(rs.skipped, Skipped{Server: r.Server, Tool: r.URI, Reason: SkipCollision,
				Detail: fmt.Sprintf("servers %s all list this URI; it is left out for each", strings.Join(s, ", "))})
			continue
		}
		rs.resources = append(rs.resources, r)
		rs.byURI[r.URI] = r
	}
	tmpls := map[string][]string{}
	for _, t := range templates {
		tmpls[t.URITemplate] = append(tmpls[t.URITemplate], t.Server)
	}
	for _, t := range templates {
		if s := tmpls[t.URITemplate]; len(s) > 1 {
			rs.skipped = append(rs.skipped, Skipped{Server: t.Server, Tool: t.URITemplate, Reason: SkipCollision,
				Detail: fmt.Sprintf("servers %s all list this URI template; it is left out for each", strings.Join(s, ", "))})
			continue
		}
		rs.templates = append(rs.templates, t)
	}
	return rs
}

// absoluteURI reports whether s parses as a URI with a scheme. The SDK's
// server requires that of what it offers. Templates are checked before
// their expressions are expanded. url.Parse takes those as they are.
func absoluteURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}

// filter returns the resources and templates for which keep returns true.
// keep is given the URI or URI template. The others are reported with
// reason.
func (rs *ResourceSet) filter(reason SkipReason, keep func(server, uri string) bool) *ResourceSet {
	out := &ResourceSet{byURI: map[string]*Resource{}, skipped: slices.Clone(rs.skipped)}
	for _, r := range rs.resources {
		if keep(r.Server, r.URI) {
			out.resources = append(out.resources, r)
			out.byURI[r.URI] = r
		} else {
			out.skipped = append(out.skipped, Skipped{Server: r.Server, Tool: r.URI, Reason: reason})
		}
	}
	for _, t := range rs.templates {
		if keep(t.Server, t.URITemplate) {
			out.templates = append(out.templates, t)
		} else {
			out.skipped = append(out.skipped, Skipped{Server: t.Server, Tool: t.URITemplate, Reason: reason})
		}
	}
	return out
}

// ListResourcesFor returns the resources and resource templates of every
// server that is up. It leaves out what the policy denies outright for
// opts' principal and taint. A resource is governed as server/URI, and a
// template as server/URI-template. The same patterns as tools apply. A
// condition sees [Call.Method] "resources/read". opts may be nil. The
// lists are asked for once per session. They are asked for again after a
// server says they changed.
func (g *governed) ListResourcesFor(ctx context.Context, opts *ListOptions) (*ResourceSet, error) {
	return g.c.listResourcesFor(ctx, opts)
}

// ReadResource reads a resource (resources/read) from the server that
// offers uri (see [ResourceSet.Server]). The policy decides on server/uri.
// An "ask" goes to the approver. Then the request is made as
// [Hub.GetPrompt]'s is. The error, if any, is an *Error.
//
// A server of protocol 2026-07-28 may say a read stays fresh (ttlMs). The
// SDK's session then answers the next read of the URI from its cache. The
// cache is keyed by the URI alone, whoever asks. It is consulted only once
// the pipeline has decided the read for this caller (policy, approval,
// hooks). So a read the policy denies one principal is never answered
// from another's cached read.
//
// Across principals, the cache may give what the server answered the
// session. For a server of IdentityShared, the session's credentials are
// the hub's own. The server sees one client, whatever its cacheScope. For
// a server of IdentityPrincipal, they are the principal's, and sessions
// are per principal.
//
// A server whose read depends on the request's _meta must not hint it
// fresh. conduit passes that _meta on from its caller. A read that went
// through an input exchange is never cached. The result is the caller's
// own copy. Changing it changes no later read's.
func (g *governed) ReadResource(ctx context.Context, uri string, opts *CallOptions) (*mcp.ReadResourceResult, error) {
	return g.c.readResource(ctx, uri, opts)
}

// SubscribeResource subscribes to updates of the resource at uri
// (resources/subscribe) on the server that offers it. Updates are told to
// [Trace.ResourceUpdated]. What the policy denies on server/uri is
// refused. An "ask" is not asked about, since nothing is read. A
// subscription lasts as long as the server's session. Subscribe again
// after [Trace.ServerUp]. The error, if any, is an *Error.
func (g *governed) SubscribeResource(ctx context.Context, uri string, opts *CallOptions) error {
	return g.c.subscribe(ctx, uri, opts, true)
}

// UnsubscribeResource ends a subscription made by SubscribeResource.
func (g *governed) UnsubscribeResource(ctx context.Context, uri string, opts *CallOptions) error {
	return g.c.subscribe(ctx, uri, opts, false)
}

// listResourcesAs lists the resources for lf, under their cache hints.
func (c *core) listResourcesAs(ctx context.Context, lf listFor) (*ResourceSet, error) {
	lists := make([]serverResources, len(c.slots))
	has := func(caps *mcp.ServerCapabilities) bool { return caps.Resources != nil }
	err := c.eachServer(ctx, lf.principal, func(ctx context.Context, i int, id string, cn *conn, err error) {
		if err != nil {
			lists[i] = serverResources{Server: id, Down: err}
			return
		}
		res, err := listFeature(ctx, c, cn, &cn.feats.resources, lf, methodListResources, has,
			func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) ([]*mcp.Resource, error) {
				var params *mcp.ListResourcesParams
				if len(meta) > 0 {
					params = &mcp.ListResourcesParams{Meta: meta}
				}
				return collect(ctx, sess.Resources(ctx, params))
			})
		var tmpls []*mcp.ResourceTemplate
		if err == nil {
			tmpls, err = listFeature(ctx, c, cn, &cn.feats.templates, lf, methodListTemplates, has,
				func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) ([]*mcp.ResourceTemplate, error) {
					var params *mcp.ListResourceTemplatesParams
					if len(meta) > 0 {
						params = &mcp.ListResourceTemplatesParams{Meta: meta}
					}
					tmpls, err := collect(ctx, sess.ResourceTemplates(ctx, params))
					var rpcErr *jsonrpc.Error
					if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
						// Templates are optional: a server with resources
						// may not know the method.
						return nil, nil
					}
					return tmpls, err
				})
		}
		lists[i] = serverResources{Server: cn.srv.ID, Resources: res, Templates: tmpls, Down: err}
	})
	if err != nil {
		return nil, err
	}
	return newResourceSet(lists...), nil
}

func (c *core) listResourcesFor(ctx context.Context, opts *ListOptions) (*ResourceSet, error) {
	var o ListOptions
	if opts != nil {
		o = *opts
	}
	rs, err := c.listResourcesAs(ctx, listFor{principal: o.Principal})
	if err != nil || c.Policy == nil {
		return rs, err
	}
	return rs.filter(SkipPolicy, func(server, uri string) bool {
		return !c.policyDenies(&Call{Method: methodReadResource, Server: server, Tool: uri, Exposed: uri, Principal: o.Principal, Taint: o.Taint})
	}), nil
}

// resourceRequest is a request of method about uri, resolved to the
// server that offers it.
func (c *core) resourceRequest(method, uri string, opts *CallOptions) *request {
	o := callOptions(opts)
	r := newRequest(method, o, methodReadResource, uri)
	r.call.Tool = uri
	r.resolve = func(ctx context.Context) error {
		rs, err := c.listResourcesAs(ctx, listFor{principal: o.Principal, resolve: true})
		if err != nil {
			return listingError(ctx, err)
		}
		server, err := rs.Server(uri)
		if err != nil {
			return err
		}
		r.call.Server = server
		return nil
	}
	return r
}

func (c *core) readResource(ctx context.Context, uri string, opts *CallOptions) (*mcp.ReadResourceResult, error) {
	r := c.resourceRequest(methodReadResource, uri, opts)
	var res *mcp.ReadResourceResult
	r.do = func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error {
		cached, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{Meta: meta, URI: uri})
		if err == nil && cached == nil {
			err = errors.New("the server sent an empty result")
		}
		if err == nil {
			res = ownRead(cached)
		}
		return err
	}
	if _, err := c.run(ctx, r); err != nil {
		return nil, err
	}
	return res, nil
}

// ownRead is a copy of res. The SDK's session may keep res in its cache of
// reads and give it to later reads. A caller may change the copy. The
// gateway's server sets its cache hint, and fills in a content's missing
// URI. That reaches neither the cache nor another caller.
func ownRead(res *mcp.ReadResourceResult) *mcp.ReadResourceResult {
	c := *res
	if res.Contents == nil {
		return &c
	}
	c.Contents = make([]*mcp.ResourceContents, len(res.Contents))
	for i, rc := range res.Contents {
		if rc != nil {
			cp := *rc
			c.Contents[i] = &cp
		}
	}
	return &c
}

func (c *core) subscribe(ctx context.Context, uri string, opts *CallOptions, on bool) error {
	method := methodSubscribe
	if !on {
		method = methodUnsubscribe
	}
	r := c.resourceRequest(method, uri, opts)
	r.noAsk = true
	r.do = func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error {
		if caps := capabilities(sess); caps.Resources == nil || !caps.Resources.Subscribe {
			r.info.unsent()
			return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the server does not offer resource subscriptions"}
		}
		if on {
			return sess.Subscribe(ctx, &mcp.SubscribeParams{Meta: meta, URI: uri})
		}
		return sess.Unsubscribe(ctx, &mcp.UnsubscribeParams{Meta: meta, URI: uri})
	}
	_, err := c.run(ctx, r)
	return err
}
