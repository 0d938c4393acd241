package gateway

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What passes between a session's client and the servers besides calls:
//
//   - the client's logging level;
//   - the servers' log messages;
//   - the requests servers make during the session's calls (elicitation,
//     sampling, roots).

// watchLevel passes a client's logging/setLevel on to the servers.
func (s *session) watchLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" && err == nil {
			s.mu.Lock()
			s.level = p.Level
			s.mu.Unlock()
			if err := s.g.levelChanged(ctx); err != nil {
				s.g.logger.Debug("gateway: setting the servers' log level", "err", err)
			}
		}
		return res, err
	}
}

// logLevel is the level the client asked for, or "".
func (s *session) logLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// log sends a server's log message to the client. The SDK drops what is
// below the level the client set. During the call it belongs to, it goes
// with the call. After the call has been answered, it goes on its own.
func (s *session) log(ctx context.Context, p *mcp.LoggingMessageParams) {
	ss := s.serverSession()
	if ss == nil || p == nil {
		return
	}
	if ss.Log(ctx, p) != nil && ctx.Err() == nil {
		ss.Log(s.g.ctx, p)
	}
}

// The requests servers make during this session's calls, passed on to the
// client. ctx is the call's, so the request goes with the call.

func (s *session) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	ss := s.serverSession()
	if ss == nil || s.clientCaps().Elicitation == nil {
		return nil, errors.New("conduit serve: the client did not declare the elicitation capability")
	}
	return ss.Elicit(ctx, req.Params)
}

func (s *session) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	ss := s.serverSession()
	if ss == nil || s.clientCaps().Sampling == nil {
		return nil, errors.New("conduit serve: the client did not declare the sampling capability")
	}
	return ss.CreateMessage(ctx, req.Params)
}

func (s *session) roots(ctx context.Context, req *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	ss := s.serverSession()
	if ss == nil || s.clientCaps().RootsV2 == nil {
		return nil, errors.New("conduit serve: the client did not declare the roots capability")
	}
	return ss.ListRoots(ctx, req.Params)
}
