package gateway

import (
	"context"

	"github.com/conduitmcp/conduit/apps"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Apps through the gateway. Tools only an app may call reach a client
// that declares it shows apps, and no other.

// showsApps reports whether the client of req declared the MCP Apps
// extension. Only such a host keeps app-only tools from its model.
func showsApps(req mcp.Request) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	_, ok := requestCaps(ss).Extensions[apps.Extension]
	return ok
}

// appTools is the session's middleware for app-only tools. It leaves them
// out of the listing of a client that does not show apps. It refuses that
// client's call of one as an unknown tool, nothing sent. Their _meta.ui
// passes on unchanged to a client that does show apps.
func (s *session) appTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			res, err := next(ctx, method, req)
			lr, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok || showsApps(req) {
				return res, err
			}
			out := *lr
			out.Tools = nil
			for _, t := range lr.Tools {
				if !apps.AppOnly(t) {
					out.Tools = append(out.Tools, t)
				}
			}
			return &out, nil
		case "tools/call":
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if ok && !showsApps(req) {
				s.mu.Lock()
				def := s.defs[p.Name]
				s.mu.Unlock()
				if apps.AppOnly(def) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool \"" + p.Name + "\""}
				}
			}
		}
		return next(ctx, method, req)
	}
}
