package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// notesServer is an in-process MCP server; real programs name a command
// or a URL in conduit.Server instead.
func notesServer() conduit.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	for _, name := range []string{"add", "delete"} {
		s.AddTool(&mcp.Tool{Name: name, Description: "The " + name + " tool.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " " + string(req.Params.Arguments)}}}, nil
			})
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), st, nil); err != nil {
		log.Fatal(err)
	}
	return conduit.Server{ID: "notes", Transport: ct}
}

func ExampleGateway_Serve() {
	ctx := context.Background()
	g, err := gateway.New(ctx, []conduit.Server{notesServer()}, &gateway.Options{Hub: &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Allow("notes/add")),
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()

	// One session; conduit serve gives Serve &mcp.StdioTransport{}.
	clientT, serverT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, serverT, &gateway.SessionOptions{Principal: "alice"}) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("tool:", tool.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes__add", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	cs.Close()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// tool: notes__add
	// add {"text":"hi"}
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func ExampleGateway_Handler() {
	ctx := context.Background()
	g, err := gateway.New(ctx, []conduit.Server{notesServer()}, &gateway.Options{Hub: &conduit.Options{
		Policy: conduit.NewPolicy(conduit.Allow("notes/delete").When(conduit.Principal("admin")), conduit.Allow("notes/add")),
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	// Tokens come from the environment in real use (conduit serve reads
	// the variables the configuration's "serve" object names).
	h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{
		"admin-token-0123456789": "admin",
		"guest-token-0123456789": "guest",
	}})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, token := range []string{"admin-token-0123456789", "guest-token-0123456789"} {
		t := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{token}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, t, nil)
		if err != nil {
			log.Fatal(err)
		}
		var names []string
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				log.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		fmt.Println(token[:5], names)
		cs.Close()
	}

	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("without a token:", resp.StatusCode)
	// Output:
	// admin [notes__add notes__delete]
	// guest [notes__add]
	// without a token: 401
}

func ExampleGateway_ListenAndServe() {
	g, err := gateway.New(context.Background(), []conduit.Server{notesServer()}, &gateway.Options{Hub: &conduit.Options{
		Policy: conduit.AllowAll(),
	}})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	ctx, stop := context.WithCancel(context.Background())
	// Port 0 picks a free port; ready is told which, and here the server
	// is stopped at once. conduit serve --http 127.0.0.1:8080 --no-auth
	// does the same until it is interrupted.
	err = g.ListenAndServe(ctx, "127.0.0.1:0", &gateway.HTTPOptions{NoAuth: true}, func(addr net.Addr) {
		resp, err := http.Post("http://"+addr.String()+"/mcp", "application/json", strings.NewReader(`{}`))
		if err == nil {
			fmt.Println("the endpoint answers:", resp.StatusCode)
			resp.Body.Close()
		}
		stop()
	})
	fmt.Println("stopped:", err)
	// Output:
	// the endpoint answers: 400
	// stopped: <nil>
}

// The gateway as an OAuth 2.1 protected resource: it accepts the JWT
// access tokens of an authorization server for its own URL, publishes
// its protected resource metadata, and every 401 names it, which is how
// an MCP client that logs in by OAuth finds where to.
func ExampleOAuthOptions() {
	ctx := context.Background()
	g, err := gateway.New(ctx, []conduit.Server{notesServer()}, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	o := &gateway.OAuthOptions{Issuer: "https://login.example.com", Resource: "https://mcp.example.com/mcp", Scopes: []string{"mcp"}}
	h, err := g.Handler(&gateway.HTTPOptions{OAuth: o})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle(o.MetadataPath(), o.Metadata())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Post(srv.URL+"/mcp", "application/json", nil)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	resp, err = http.Get(srv.URL + o.MetadataPath())
	if err != nil {
		log.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	fmt.Println(meta.Resource, meta.AuthorizationServers)
	// Output:
	// 401 Bearer realm="conduit", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp"
	// https://mcp.example.com/mcp [https://login.example.com]
}

// A client of MCP 2026-07-28 has no session: an "ask" rule is answered
// with an input-required result whose requestState the gateway seals
// with StateKeys, and the client's retry with its answer runs the call.
// The Go SDK's client answers such results with its handlers by itself;
// replicas that share StateKeys and a Store honour each other's states.
func ExampleOptions_stateKeys() {
	ctx := context.Background()
	g, err := gateway.New(ctx, []conduit.Server{notesServer()}, &gateway.Options{
		Hub: &conduit.Options{Policy: conduit.NewPolicy(conduit.Ask("notes/delete"), conduit.Allow("notes"))},
		// conduit serve reads them from CONDUIT_STATE_KEY.
		StateKeys: [][]byte{[]byte("a secret of 32 bytes or more, shared by replicas")},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{"alice-token-0123456789": "alice"}})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println("asked:", req.Params.Message)
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	t := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{"alice-token-0123456789"}}}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	fmt.Println("protocol:", cs.InitializeResult().ProtocolVersion)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes__delete", Arguments: map[string]any{"id": 7}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// protocol: 2026-07-28
	// asked: Allow calling the tool notes__delete of notes with arguments {"id":7}?
	// delete {"id":7}
}

// Limits bound each principal's calls, counted in the hub's Store (across
// replicas when it is shared): the call over a limit is answered with a
// tool error that says when to retry, and Usage reports what a principal
// has used, as /status shows it to them.
func ExampleLimit() {
	ctx := context.Background()
	g, err := gateway.New(ctx, []conduit.Server{notesServer()}, &gateway.Options{
		Hub:    &conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("notes"))},
		Limits: []gateway.Limit{{Tools: []string{"notes/add"}, PerMinute: 2}},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	h, err := g.Handler(&gateway.HTTPOptions{Tokens: map[string]string{"alice-token-0123456789": "alice"}})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil)
	t := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{"alice-token-0123456789"}}}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	for i := range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes__add", Arguments: map[string]any{"n": i}})
		if err != nil {
			log.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		fmt.Println(res.IsError, strings.SplitN(text, ": retry", 2)[0])
	}
	usage, err := g.Usage(ctx, "alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("alice used", usage[0].Calls, "of", usage[0].Limit.PerMinute)
	// Output:
	// false add {"n":0}
	// false add {"n":1}
	// true The call to notes__add was not sent: conduit serve's limit on notes/add allows "alice" 2 calls per minute, and they are used
	// alice used 2 of 2
}

// A client may name the conversation of each request in _meta. By
// default every request is still decided with all its principal has
// seen; TaintConversation decides each with its own conversation's taint,
// for clients trusted to keep their conversations apart.
func ExampleTaintScope() {
	g, err := gateway.New(context.Background(), []conduit.Server{notesServer()}, &gateway.Options{
		Hub:        &conduit.Options{Policy: conduit.AllowAll()},
		TaintScope: gateway.TaintConversation,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	fmt.Println("default:", gateway.TaintPrincipal, "chosen:", gateway.TaintConversation)
	_, err = gateway.New(context.Background(), nil, &gateway.Options{Hub: &conduit.Options{Policy: conduit.AllowAll()}, TaintScope: 7})
	fmt.Println(err)
	// Output:
	// default: principal chosen: conversation
	// gateway: unknown TaintScope(7)
}

// The gateway makes a task of each call of notes/add for the clients that
// declare the tasks extension: conduit's own client does over Streamable
// HTTP, and follows the task to its result.
func ExampleTaskOptions() {
	ctx := context.Background()
	g, err := gateway.New(ctx, []conduit.Server{notesServer()}, &gateway.Options{
		Hub:   &conduit.Options{Policy: conduit.AllowAll()},
		Tasks: &gateway.TaskOptions{Tools: []string{"notes/add"}, PollInterval: 100 * time.Millisecond},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	h, err := g.Handler(&gateway.HTTPOptions{NoAuth: true})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "gw", URL: srv.URL}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	res, err := hub.CallTool(ctx, "gw__notes__add", map[string]any{"text": "hi"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, task := res.Meta[conduit.MetaTaskID]
	fmt.Println(res.Content[0].(*mcp.TextContent).Text, "task:", task)
	// Output:
	// add {"text":"hi"} task: true
}

// A caller that waits on timers of its own (a durable workflow) detaches
// the task: the call returns it at once as a deferral, and each take-up
// asks about it once, until its result.
func ExampleTaskOptions_detach() {
	ctx := context.Background()
	g, err := gateway.New(ctx, []conduit.Server{notesServer()}, &gateway.Options{
		Hub:   &conduit.Options{Policy: conduit.AllowAll()},
		Tasks: &gateway.TaskOptions{Tools: []string{"notes/add"}, PollInterval: 50 * time.Millisecond},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	h, err := g.Handler(&gateway.HTTPOptions{NoAuth: true})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "gw", URL: srv.URL}}, &conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	args := map[string]any{"text": "later"}
	opts := &conduit.CallOptions{DetachTask: true}
	for {
		res, err := hub.CallTool(ctx, "gw__notes__add", args, opts)
		var d *conduit.Deferral
		if errors.As(err, &d) && d.Input != nil && d.Input.Task != nil {
			time.Sleep(d.Input.Task.PollInterval) // a workflow.Sleep in a workflow
			opts.Input = d.Input
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Content[0].(*mcp.TextContent).Text, "polled:", opts.Input != nil)
		return
	}
	// Output:
	// add {"text":"later"} polled: true
}
