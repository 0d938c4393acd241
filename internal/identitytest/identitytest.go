// Package identitytest is an MCP server that answers with the identity it
// sees, for the tests of conduit's identity per principal (the confused
// deputy): over Streamable HTTP, the user whose bearer token opened the
// session (a request of the session with another user's token is
// refused, as the SDK's bearer middleware binds a session to its user);
// over stdio, the token its environment gives it. Each session keeps its
// own notes, served as resources and prompts of that session only, as a
// server that scopes what it serves to a session does.
package identitytest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TokenEnv is the variable a stdio server takes its token from.
const TokenEnv = "IDENTITY_TEST_TOKEN"

// HTTP is the server over Streamable HTTP.
type HTTP struct {
	users  map[string]string // token -> user
	admins map[string]bool
	h      http.Handler

	mu   sync.Mutex
	seen []string // the bearer token of every request, "" for none
}

// NewHTTP returns the server of users (bearer token -> user). Every
// request must carry one of the tokens, or it is answered 401. The users
// of admins are offered the tool "admin" besides the others: tools may
// differ per user.
func NewHTTP(users map[string]string, admins ...string) *HTTP {
	h := &HTTP{users: users, admins: map[string]bool{}}
	for _, a := range admins {
		h.admins[a] = true
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		var user string
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			user = ti.UserID
		}
		return newServer(user, h.admins[user], "")
	}, nil)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		user, ok := h.users[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: user}, nil
	}
	protected := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(mcpHandler)
	h.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := ""
		if v, ok := cutBearer(r.Header.Get("Authorization")); ok {
			tok = v
		}
		h.mu.Lock()
		h.seen = append(h.seen, tok)
		h.mu.Unlock()
		protected.ServeHTTP(w, r)
	})
	return h
}

func cutBearer(v string) (string, bool) {
	if len(v) > 7 && (v[:7] == "Bearer " || v[:7] == "bearer ") {
		return v[7:], true
	}
	return "", false
}

// ServeHTTP serves MCP.
func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// Seen returns the bearer token of every request received, in order (""
// for a request without one).
func (h *HTTP) Seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// ServeStdio serves one session on stdin and stdout, as the user whose
// token is in TokenEnv, until the client ends it.
func ServeStdio() error {
	s := newServer(os.Getenv(TokenEnv), false, "stdio")
	return s.Run(context.Background(), &mcp.StdioTransport{})
}

// newServer is one session's server for user. Its tools:
//
//	whoami        the user (over stdio: the token of TokenEnv)
//	pid           the process id (stdio)
//	getenv {name} a variable of the process's environment (stdio)
//	environ       the process's whole environment, a variable a line (stdio)
//	note {text}   adds a note to the session: a resource note://USER/N
//	              and a prompt note_N, of this session only; answers the URI
//	admin         for admins only
func newServer(user string, admin bool, mode string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "identity", Version: "1"}, &mcp.ServerOptions{
		// Declared before any note: they come during the session.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
		},
	})
	add := func(name string, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: "the " + name + " tool", InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
	}
	text := func(t string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
	}
	add("whoami", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(user), nil
	})
	if mode == "stdio" {
		add("pid", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strconv.Itoa(os.Getpid())), nil
		})
		add("getenv", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(os.Getenv(arg(req, "name"))), nil
		})
		add("environ", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strings.Join(os.Environ(), "\n")), nil
		})
	}
	if admin {
		add("admin", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("admin of " + user), nil
		})
	}
	var mu sync.Mutex
	n := 0
	add("note", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		body := arg(req, "text")
		mu.Lock()
		n++
		id := n
		mu.Unlock()
		uri := fmt.Sprintf("note://%s/%d", user, id)
		s.AddResource(&mcp.Resource{URI: uri, Name: fmt.Sprintf("note %d", id), MIMEType: "text/plain"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: body}}}, nil
			})
		s.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("note_%d", id)}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: body}}}}, nil
		})
		return text(uri), nil
	})
	return s
}

func arg(req *mcp.CallToolRequest, key string) string {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	v, _ := m[key].(string)
	return v
}
