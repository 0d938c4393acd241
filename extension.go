// The governed hook of MCP extensions: one request of an extension's
// method, sent to one server under the policy's decision and the pins.
// The skills package reaches servers only through it.
package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/pins"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An ExtensionRequest is one request of an MCP extension, sent by
// [Hub.Extension] to one server. The SDK has no method for it, so conduit
// frames it with the SDK's jsonrpc types on the session's transport.
type ExtensionRequest struct {
	// Server is the server's id. On a Client, "" is its server.
	Server string
	// Extension is the extension's name in the server's capabilities. A
	// server that does not declare it is not asked. The answer is then a
	// *jsonrpc.Error with code -32601 (method not found).
	Extension string
	// Setting, when set, is a setting of Extension that must be true (as
	// the skills extension's "directoryRead"). Else the same -32601.
	Setting string
	// Method is the method sent. "resources/read" is the governed read of
	// Params["uri"] from Server, as [Hub.ReadResource] reads (policy on
	// server/URI, hooks, approval).
	Method string
	// DecideOnly sends nothing. The server must be up and declare the
	// extension (and Setting); the policy decides on Governed, and the
	// pins are checked. The result is nil.
	DecideOnly bool
	// Params are the request's parameters. Nil is none.
	Params map[string]any
	// Governed is what the request is, for the policy: it decides on
	// Server/Governed, a condition seeing [Call.Method] Method. A skill
	// is "skill:NAME". "" is not decided (a listing, or a file read that
	// the policy decides as server/URI).
	Governed string
	// Pin asks for the pin check: with pins, a skill ("skill:NAME") is
	// refused unless Digest is the digest pinned for it. A listing does
	// not ask, so that it shows what a pin would refuse.
	Pin bool
	// Digest is what Governed is now (a skill's digest).
	Digest string
}

// Extension sends req to its server and returns the raw result. Denied
// by the policy it is an [*Error] matching ErrDenied;
// unpinned or changed, ErrUnknownTool, also matching pins.ErrNotPinned. A
// JSON-RPC error of the server is a *jsonrpc.Error. It is the one way
// extension packages reach a server, so that every extension is
// governed as tools are.
func (g *governed) Extension(ctx context.Context, req *ExtensionRequest, opts *CallOptions) (json.RawMessage, error) {
	return g.c.extension(ctx, req, opts)
}

// errNoExtension answers a request of an extension the server lacks.
func errNoExtension(server, what string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "server " + server + " does not declare " + what}
}

func (c *core) extension(ctx context.Context, req *ExtensionRequest, opts *CallOptions) (json.RawMessage, error) {
	if req == nil || req.Extension == "" || req.Method == "" {
		return nil, errors.New("conduit: an extension request names no extension or no method")
	}
	o := callOptions(opts)
	server := req.Server
	if server == "" && len(c.slots) == 1 {
		server = c.slots[0].srv.ID
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	cn, release, err := c.connFor(ctx, server, o.Principal)
	if err != nil {
		return nil, err
	}
	defer release()
	sess, err := cn.current()
	if err != nil {
		return nil, err
	}
	set, ok := capabilities(sess).Extensions[req.Extension]
	if !ok {
		return nil, errNoExtension(server, req.Extension)
	}
	if req.Setting != "" {
		if m, _ := set.(map[string]any); m[req.Setting] != true {
			return nil, errNoExtension(server, req.Extension+" with "+req.Setting)
		}
	}
	if req.Governed != "" {
		call := &Call{Method: req.Method, Server: server, Tool: req.Governed, Exposed: req.Governed, Principal: o.Principal, Taint: o.Taint}
		if denied, why := c.policyDenial(call); denied {
			return nil, &Error{Kind: ErrDenied, Server: server, Tool: req.Governed, Message: req.Governed + " was " + why + "."}
		}
		if name, ok := strings.CutPrefix(req.Governed, "skill:"); ok && req.Pin {
			if err := c.checkSkillPin(server, name, req.Digest); err != nil {
				return nil, err
			}
		}
	}
	if req.DecideOnly {
		return nil, nil
	}
	if req.Method == methodReadResource {
		uri, _ := req.Params["uri"].(string)
		res, err := c.readFrom(ctx, server, uri, opts)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	}
	params := map[string]any{}
	for k, v := range req.Params {
		params[k] = v
	}
	var raw json.RawMessage
	if err := cn.extCall(ctx, sess, req.Method, params, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// readFrom is the governed resources/read of uri from server, which the
// resource lists need not name (a skill's file need not be listed).
func (c *core) readFrom(ctx context.Context, server, uri string, opts *CallOptions) (*mcp.ReadResourceResult, error) {
	o := callOptions(opts)
	r := newRequest(methodReadResource, o, methodReadResource, uri)
	r.call.Tool = uri
	r.resolve = func(context.Context) error {
		r.call.Server = server
		return nil
	}
	var res *mcp.ReadResourceResult
	r.do = func(ctx context.Context, sess *mcp.ClientSession, meta mcp.Meta) error {
		got, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{Meta: meta, URI: uri})
		if err == nil && got == nil {
			err = errors.New("the server sent an empty result")
		}
		if err == nil {
			res = ownRead(got)
		}
		return err
	}
	if _, err := c.run(ctx, r); err != nil {
		return nil, err
	}
	return res, nil
}

// checkSkillPin refuses a skill that is not pinned, or whose listing is
// not the pinned one, when the hub has pins. Nothing is read first.
func (c *core) checkSkillPin(server, name, got string) error {
	if c.Pins == nil {
		return nil
	}
	want, ok := c.Pins.SkillDigest(server, name)
	switch {
	case !ok:
		return newError(ErrUnknownTool, server, "skill:"+name,
			"The skill "+name+" is not offered: it is not pinned.",
			fmt.Errorf("%w: skill %s of server %s is new", pins.ErrNotPinned, name, server))
	case got != want:
		return newError(ErrUnknownTool, server, "skill:"+name,
			"The skill "+name+" is not offered: it changed since it was pinned.",
			fmt.Errorf("%w: skill %s of server %s is %s, pinned %s", pins.ErrNotPinned, name, server, got, want))
	}
	return nil
}
