package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/codemode"
	"github.com/conduitmcp/conduit/internal/jsonv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Keeping a session's tools, prompts and resources as the hub offers them
// to its principal with its taint. They are registered on its server.
// They change when the hub's lists or the taint change.

// refresh brings the session's lists up to date, logging what fails.
func (s *session) refresh(ctx context.Context, c changes) {
	if err := s.sync(ctx, c); err != nil && ctx.Err() == nil {
		s.g.logger.Warn("gateway: listing for a session", "err", err)
	}
}

// sync lists what changed for the session and registers the difference
// with its server, which tells the client the lists changed.
func (s *session) sync(ctx context.Context, c changes) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	// App-only tools are listed for a host; appTools keeps them from a
	// client that does not show apps.
	lo := &conduit.ListOptions{Principal: s.principal, Taint: s.taintList(ctx), AppTools: true}
	var errs []error
	if c&changedTools != 0 {
		ts, err := s.g.src.ListToolsFor(ctx, lo)
		if err == nil {
			s.g.report("tool", ts.Skipped())
			s.syncTools(ts)
		}
		errs = append(errs, err)
	}
	if c&changedPrompts != 0 {
		ps, err := s.g.src.ListPromptsFor(ctx, lo)
		if err == nil {
			s.g.report("prompt", ps.Skipped())
			s.syncPrompts(ps)
		}
		errs = append(errs, err)
	}
	if c&changedResources != 0 {
		rs, err := s.g.src.ListResourcesFor(ctx, lo)
		if err == nil {
			s.g.report("resource", rs.Skipped())
			s.syncResources(rs)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// servable reports why the SDK's server would refuse to register tool.
// The tool's schema is the server's. The input schema must be an object
// schema.
func servable(t *mcp.Tool) error {
	m := jsonv.ObjectOf(t.InputSchema)
	if m == nil {
		return errors.New("its input schema is not a JSON object")
	}
	if m["type"] != "object" {
		return errors.New(`its input schema is not of type "object"`)
	}
	return nil
}

// register adds under name. It recovers from the SDK's panic on a
// definition it refuses, since the definitions come from servers.
func register(name string, add func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s cannot be served: %v", name, r)
		}
	}()
	add()
	return nil
}

// syncTools registers the tools of ts with the session's server. It
// removes those ts no longer offers. A tool's handler resolves its calls
// against the tool set that offered it, not the session's newest. The
// client calls what it was offered. The server may dispatch a call just
// before a refresh removes its tool (for a taint the policy now denies it
// for). That call must meet the policy, not be answered as an unknown
// tool.
func (s *session) syncTools(ts *conduit.ToolSet) {
	s.mu.Lock()
	old := maps.Clone(s.defs)
	s.mu.Unlock()
	keep := map[string]*mcp.Tool{}
	listed := ts
	if s.g.codeMode.On {
		ts = s.g.codeModeSet(ts)
	}
	for t := range ts.All() {
		keep[t.Exposed] = t.Tool
		if old[t.Exposed] == t.Tool {
			continue
		}
		if err := servable(t.Tool); err != nil {
			s.g.logger.Warn("gateway: a tool is left out", "tool", t.Exposed, "reason", err)
			delete(keep, t.Exposed)
			continue
		}
		def := *t.Tool
		def.Name = t.Exposed
		def.Description = toolcall.Description(t.Description)
		name := t.Exposed
		if err := register(name, func() {
			s.server.AddTool(&def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if s.g.codeMode.On && t.Server == codemode.ToolServer && name == codemode.ToolName {
					return s.callCode(ctx, listed, t, req)
				}
				return s.callTool(ctx, ts, name, req)
			})
		}); err != nil {
			s.g.logger.Warn("gateway: a tool is left out", "tool", name, "reason", err)
			delete(keep, name)
		}
	}
	var gone []string
	for name := range old {
		if _, ok := keep[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.server.RemoveTools(gone...)
	}
	s.mu.Lock()
	s.defs, s.tools = keep, ts
	s.mu.Unlock()
}

// downCalls answers a tools/call of a tool whose server is down as the hub
// does: unavailable (try later). The session's server would answer
// "unknown tool". The tool left the list when its server went down. But a
// client may still call it by the name it was offered. Any other name not
// registered goes on to the SDK's answer.
func (s *session) downCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.CallToolRequest)
		if !ok || method != "tools/call" || r.Params == nil {
			return next(ctx, method, req)
		}
		s.mu.Lock()
		_, registered := s.defs[r.Params.Name]
		ts := s.tools
		s.mu.Unlock()
		if registered || ts == nil {
			return next(ctx, method, req)
		}
		var e *conduit.Error
		if _, _, err := ts.Resolve(r.Params.Name, nil); !errors.As(err, &e) || e.Kind != conduit.ErrUnavailable {
			return next(ctx, method, req)
		}
		// Through the pipeline, which resolves the name the same way and
		// answers, traced, with nothing sent.
		return s.callTool(ctx, ts, r.Params.Name, r)
	}
}

func (s *session) syncPrompts(ps *conduit.PromptSet) {
	s.mu.Lock()
	old := maps.Clone(s.prompts)
	s.mu.Unlock()
	keep := map[string]*conduit.Prompt{}
	for p := range ps.All() {
		keep[p.Exposed] = p
		if o := old[p.Exposed]; o != nil && o.Prompt == p.Prompt {
			continue
		}
		def := *p.Prompt
		def.Name = p.Exposed
		def.Description = toolcall.Description(p.Description)
		name := p.Exposed
		s.server.AddPrompt(&def, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return s.getPrompt(ctx, name, req)
		})
	}
	var gone []string
	for name := range old {
		if _, ok := keep[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.server.RemovePrompts(gone...)
	}
	s.mu.Lock()
	s.prompts = keep
	s.mu.Unlock()
}

func (s *session) syncResources(rs *conduit.ResourceSet) {
	s.mu.Lock()
	s.rset = rs
	oldRes, oldTmpls := maps.Clone(s.res), maps.Clone(s.tmpls)
	s.mu.Unlock()
	keepRes := map[string]*mcp.Resource{}
	for r := range rs.Resources() {
		keepRes[r.URI] = r.Resource
		if oldRes[r.URI] == r.Resource {
			continue
		}
		def := *r.Resource
		def.Description = toolcall.Description(r.Description)
		if err := register(r.URI, func() { s.server.AddResource(&def, s.readResource) }); err != nil {
			s.g.logger.Warn("gateway: a resource is left out", "uri", r.URI, "reason", err)
			delete(keepRes, r.URI)
		}
	}
	keepTmpls := map[string]*mcp.ResourceTemplate{}
	for t := range rs.Templates() {
		keepTmpls[t.URITemplate] = t.ResourceTemplate
		if oldTmpls[t.URITemplate] == t.ResourceTemplate {
			continue
		}
		def := *t.ResourceTemplate
		def.Description = toolcall.Description(t.Description)
		if err := register(t.URITemplate, func() { s.server.AddResourceTemplate(&def, s.readResource) }); err != nil {
			s.g.logger.Warn("gateway: a resource template is left out", "uri", t.URITemplate, "reason", err)
			delete(keepTmpls, t.URITemplate)
		}
	}
	var gone []string
	for uri := range oldRes {
		if _, ok := keepRes[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.server.RemoveResources(gone...)
	}
	gone = gone[:0]
	for uri := range oldTmpls {
		if _, ok := keepTmpls[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.server.RemoveResourceTemplates(gone...)
	}
	s.mu.Lock()
	s.res, s.tmpls = keepRes, keepTmpls
	s.mu.Unlock()
}
