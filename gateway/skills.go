// Skills (SEP-2640) passed on by conduit serve, under each principal's
// policy. The SDK's server knows no skills method, so they are its
// custom methods (its own JSON-RPC framing and middleware).
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/skills"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The skills extension's methods, as the gateway answers them.
type (
	skillsListParams struct {
		mcp.ParamsBase
		Cursor string `json:"cursor,omitempty"`
	}
	skillsListResult struct {
		mcp.ResultBase
		ResultType string            `json:"resultType"`
		TTLMs      int               `json:"ttlMs"`
		CacheScope string            `json:"cacheScope"`
		Skills     []json.RawMessage `json:"skills"`
	}
	skillsGetParams struct {
		mcp.ParamsBase
		URI string `json:"uri"`
	}
	skillsGetResult struct {
		mcp.ResultBase
		ResultType string          `json:"resultType"`
		TTLMs      int             `json:"ttlMs"`
		CacheScope string          `json:"cacheScope"`
		Skill      json.RawMessage `json:"skill"`
	}
	dirReadParams struct {
		mcp.ParamsBase
		URI    string `json:"uri"`
		Cursor string `json:"cursor,omitempty"`
	}
	dirReadResult struct {
		mcp.ResultBase
		ResultType string          `json:"resultType"`
		Resources  []*mcp.Resource `json:"resources"`
	}
)

// offerSkills declares the skills extension on s's server, and answers
// its methods, when a server of the hub declares it for s's principal.
// directoryRead is declared when a server declares that too. A backend
// that comes up later is offered to sessions made after.
func (s *session) offerSkills(ctx context.Context, caps *mcp.ServerCapabilities) {
	lo := &conduit.ListOptions{Principal: s.principal, Taint: s.taint}
	if len(skills.Servers(ctx, s.g.src, "", lo)) == 0 {
		return
	}
	settings := map[string]any{}
	if len(skills.Servers(ctx, s.g.src, skills.DirectoryRead, lo)) > 0 {
		settings[skills.DirectoryRead] = true
	}
	if caps.Extensions == nil {
		caps.Extensions = map[string]any{}
	}
	caps.Extensions[skills.ExtensionName] = settings
	s.skills = true
}

// addSkillMethods registers the skills methods on s's server.
func (s *session) addSkillMethods() error {
	if err := mcp.AddReceivingCustomMethod(s.server, "skills/list", s.listSkills); err != nil {
		return err
	}
	if err := mcp.AddReceivingCustomMethod(s.server, "skills/get", s.getSkill); err != nil {
		return err
	}
	return mcp.AddReceivingCustomMethod(s.server, "resources/directory/read", s.readDirectory)
}

// visibleSkills is what the hub's servers list of skills, less what the
// policy denies the request's principal (with its taint). A server that
// fails is logged and left out. Where two servers list one URI, the
// first in configuration order is kept: a client names a skill by URI.
func (s *session) visibleSkills(ctx context.Context, meta mcp.Meta) ([]*skills.Skill, *conduit.CallOptions, error) {
	opts, _, err := s.callOptions(ctx, nil, meta)
	if err != nil {
		return nil, nil, requestError(err)
	}
	list, err := skills.List(ctx, s.g.src, &conduit.ListOptions{Principal: opts.Principal, Taint: opts.Taint})
	if err != nil {
		s.g.logger.Warn("gateway: skills are left out", "principal", s.principal, "err", err)
	}
	seen := map[string]bool{}
	out := list[:0]
	for _, sk := range list {
		if !seen[sk.URI] {
			seen[sk.URI] = true
			out = append(out, sk)
		}
	}
	return out, opts, nil
}

// skillsCache is the cache hint of the skills methods' results. What a
// principal sees depends on who asks, so it is private.
func (s *session) skillsCache() (int, string) {
	return int(s.g.listTTL / time.Millisecond), "private"
}

func (s *session) listSkills(ctx context.Context, _ *mcp.ServerSession, p *skillsListParams) (*skillsListResult, error) {
	list, _, err := s.visibleSkills(ctx, p.Meta)
	if err != nil {
		return nil, err
	}
	res := &skillsListResult{ResultType: "complete", Skills: []json.RawMessage{}}
	res.TTLMs, res.CacheScope = s.skillsCache()
	for _, sk := range list {
		res.Skills = append(res.Skills, sk.Entry)
	}
	return res, nil
}

// errNoSkill answers a URI that is no skill the principal may see. A
// denied skill is answered so too: its existence is not told.
func errNoSkill(uri string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no skill " + uri}
}

func (s *session) getSkill(ctx context.Context, _ *mcp.ServerSession, p *skillsGetParams) (*skillsGetResult, error) {
	list, opts, err := s.visibleSkills(ctx, p.Meta)
	if err != nil {
		return nil, err
	}
	for _, sk := range list {
		if sk.URI != p.URI {
			continue
		}
		got, err := skills.Get(ctx, s.g.src, sk.Server, p.URI, &conduit.ListOptions{Principal: opts.Principal, Taint: opts.Taint})
		if err != nil {
			return nil, skillError(err)
		}
		res := &skillsGetResult{ResultType: "complete", Skill: got.Entry}
		res.TTLMs, res.CacheScope = s.skillsCache()
		return res, nil
	}
	return nil, errNoSkill(p.URI)
}

func (s *session) readDirectory(ctx context.Context, _ *mcp.ServerSession, p *dirReadParams) (*dirReadResult, error) {
	list, opts, err := s.visibleSkills(ctx, p.Meta)
	if err != nil {
		return nil, err
	}
	uri := strings.TrimSuffix(p.URI, "/")
	for _, sk := range list {
		if !sk.Under(uri) {
			continue
		}
		children, err := skills.ReadDirectory(ctx, s.g.src, sk, uri, opts)
		if err != nil {
			return nil, skillError(err)
		}
		// Every page was read: one page answers, with no cursor.
		return &dirReadResult{ResultType: "complete", Resources: children}, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: p.URI + " is not a directory of a skill"}
}

// skillOf is the skill, of those the principal may see, whose manifest
// lists uri. A URI no manifest lists is refused: it is not read.
func (s *session) skillOf(ctx context.Context, uri string, meta mcp.Meta) (*skills.Skill, error) {
	list, _, err := s.visibleSkills(ctx, meta)
	if err != nil {
		return nil, err
	}
	for _, sk := range list {
		for _, f := range sk.Files {
			if f.URI == uri {
				return sk, nil
			}
		}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: uri + " is not a file of a skill"}
}

// skillError is err as the JSON-RPC error a client is answered.
func skillError(err error) error {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		return rpcErr
	case errors.Is(err, skills.ErrNotListed):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	case errors.Is(err, skills.ErrVerification):
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the skill's file failed verification: " + err.Error()}
	}
	return requestError(err)
}

// isSkillURI reports whether uri is of the skill:// scheme.
func isSkillURI(uri string) bool { return strings.HasPrefix(uri, "skill://") }

// skillReads sends a read of a skill's file that no server lists as a
// resource to readResource, as the SDK sends a listed one. The SDK would
// answer it "not found".
func (s *session) skillReads(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.ReadResourceRequest)
		if !ok || !s.skills || r.Params == nil || !isSkillURI(r.Params.URI) {
			return next(ctx, method, req)
		}
		s.mu.Lock()
		_, listed := s.res[r.Params.URI]
		s.mu.Unlock()
		if listed {
			return next(ctx, method, req)
		}
		res, err := s.readResource(ctx, r)
		if err != nil {
			return nil, err
		}
		if res.InputRequests == nil {
			res.CacheScope = "private"
		}
		return res, nil
	}
}
