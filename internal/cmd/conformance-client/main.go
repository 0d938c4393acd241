// Command conformance-client is an MCP client built on conduit for the MCP
// conformance suite's client scenarios. The suite runs it with the test
// server's URL as its last argument. The scenario's name is in
// MCP_CONFORMANCE_SCENARIO. For some scenarios, MCP_CONFORMANCE_CONTEXT
// holds a JSON context: credentials, calls to make.
//
// It is a thin runner. Each scenario is what a user of conduit would do
// (list, call, read). Every call goes through conduit's governed pipeline.
// Every auth scenario goes through an "oauth" setting of mcp.json, parsed by
// conduit's own configuration loader. So the suite checks conduit's
// sessions, transports and OAuth, not the bare SDK's.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/skills"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A scenario is what the client does once connected.
type scenario func(ctx context.Context, cl *conduit.Client, sc *scenarioContext) error

var scenarios = map[string]scenario{
	"initialize":                          listOnly,
	"request-metadata":                    listOnly,
	"json-schema-ref-no-deref":            listOnly,
	"tools_call":                          callOne("add_numbers", map[string]any{"a": 5, "b": 3}),
	"sse-retry":                           callOne("test_reconnection", map[string]any{}),
	"elicitation-sep1034-client-defaults": callOne("test_client_elicitation_defaults", map[string]any{}),
	"sep-2322-client-request-state":       callEach(nil),
	"http-custom-headers":                 callContext,
	"http-invalid-tool-headers":           callEach(map[string]any{"region": "us-west1"}),
	"http-standard-headers":               oneOfEach,
	"json-schema-2020-12-preservation":    echoSchema,
	"sep-2640-client-no-prefetch":         listSkills,
	"sep-2640-client-verify-digest":       useSkills,
	"sep-2640-client-verify-size":         useSkills,
	"sep-2640-client-verify-frontmatter":  useSkills,
}

// authScenario is what every auth/ scenario does: list, then call the
// test server's one tool.
var authScenario = callOne("test-tool", map[string]any{})

// scenarioContext is MCP_CONFORMANCE_CONTEXT: credentials for the auth
// scenarios, calls to make for others.
type scenarioContext struct {
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
	ValidJWT         string `json:"valid_jwt"`
	ToolCalls        []struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"toolCalls"`
}

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatalf("usage: %s <server-url> (with MCP_CONFORMANCE_SCENARIO set)", os.Args[0])
	}
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			log.Fatalf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	url := os.Args[len(os.Args)-1]
	run, ok := scenarios[name]
	srv := conduit.Server{ID: "conformance", URL: url}
	if isAuth(name) {
		var err error
		if srv, err = authServer(name, url, &sc); err != nil {
			log.Fatalf("scenario %s: %v", name, err)
		}
		run, ok = authScenario, true
	}
	if !ok {
		log.Fatalf("unknown scenario %q", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	err := connect(ctx, srv, func(cl *conduit.Client) error { return run(ctx, cl, &sc) })
	if tokenFile != "" {
		os.Remove(tokenFile)
	}
	if err != nil {
		log.Fatalf("scenario %s: %v", name, err)
	}
}

func connect(ctx context.Context, srv conduit.Server, run func(*conduit.Client) error) error {
	cl, err := conduit.NewClient(ctx, srv, &conduit.Options{
		Policy: conduit.AllowAll(),
		// Accepting with no content lets conduit fill in the requested
		// schema's defaults. That is what SEP-1034 checks.
		Handlers: &conduit.Handlers{Elicitation: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}},
	})
	if err != nil {
		return err
	}
	defer cl.Close()
	if st := cl.Status()[0]; st.State != conduit.StateUp {
		return fmt.Errorf("could not connect: %v", st.Err)
	}
	return run(cl)
}

func listOnly(ctx context.Context, cl *conduit.Client, _ *scenarioContext) error {
	_, err := listTools(ctx, cl)
	return err
}

func listTools(ctx context.Context, cl *conduit.Client) (*conduit.ToolSet, error) {
	ts, err := cl.ListTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing tools: %w", err)
	}
	if st := cl.Status()[0]; st.Err != nil {
		return nil, fmt.Errorf("listing tools: the server is %s: %v", st.State, st.Err)
	}
	return ts, nil
}

// call calls the server's tool by its own name, as listed in ts.
func call(ctx context.Context, cl *conduit.Client, ts *conduit.ToolSet, tool string, args map[string]any) error {
	name, ok := ts.ExposedName("conformance", tool)
	if !ok {
		return fmt.Errorf("the server does not list %q (skipped: %v)", tool, ts.Skipped())
	}
	res, err := cl.CallTool(ctx, name, args, &conduit.CallOptions{ToolSet: ts})
	if err != nil {
		return fmt.Errorf("calling %s: %w", tool, err)
	}
	if res.IsError {
		return fmt.Errorf("%s answered isError", tool)
	}
	return nil
}

func callOne(tool string, args map[string]any) scenario {
	return func(ctx context.Context, cl *conduit.Client, _ *scenarioContext) error {
		ts, err := listTools(ctx, cl)
		if err != nil {
			return err
		}
		return call(ctx, cl, ts, tool, args)
	}
}

// callEach calls every tool listed, with args. A call that fails is logged,
// not fatal. The scenarios judge what reached the server.
func callEach(args map[string]any) scenario {
	return func(ctx context.Context, cl *conduit.Client, _ *scenarioContext) error {
		ts, err := listTools(ctx, cl)
		if err != nil {
			return err
		}
		for t := range ts.All() {
			if err := call(ctx, cl, ts, t.Name, args); err != nil {
				log.Print(err)
			}
		}
		return nil
	}
}

// callContext makes the calls the scenario's context lists.
func callContext(ctx context.Context, cl *conduit.Client, sc *scenarioContext) error {
	ts, err := listTools(ctx, cl)
	if err != nil {
		return err
	}
	for _, c := range sc.ToolCalls {
		if err := call(ctx, cl, ts, c.Name, c.Arguments); err != nil {
			log.Print(err)
		}
	}
	return nil
}

// oneOfEach calls the first tool, reads the first resource and gets the
// first prompt.
func oneOfEach(ctx context.Context, cl *conduit.Client, _ *scenarioContext) error {
	ts, err := listTools(ctx, cl)
	if err != nil {
		return err
	}
	for t := range ts.All() {
		if err := call(ctx, cl, ts, t.Name, map[string]any{}); err != nil {
			log.Print(err)
		}
		break
	}
	rs, err := cl.ListResourcesFor(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing resources: %w", err)
	}
	for r := range rs.Resources() {
		if _, err := cl.ReadResource(ctx, r.URI, nil); err != nil {
			log.Print(err)
		}
		break
	}
	ps, err := cl.ListPromptsFor(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing prompts: %w", err)
	}
	for p := range ps.All() {
		if _, err := cl.GetPrompt(ctx, p.Exposed, map[string]string{}, nil); err != nil {
			log.Print(err)
		}
		break
	}
	return nil
}

// echoSchema passes the input schema conduit offers for the focal tool back
// to the server. The server checks what was kept of it.
func echoSchema(ctx context.Context, cl *conduit.Client, _ *scenarioContext) error {
	ts, err := listTools(ctx, cl)
	if err != nil {
		return err
	}
	name, ok := ts.ExposedName("conformance", "json_schema_2020_12_tool")
	if !ok {
		return fmt.Errorf("the server does not list json_schema_2020_12_tool (skipped: %v)", ts.Skipped())
	}
	t, _ := ts.Lookup(name)
	return call(ctx, cl, ts, "json_schema_echo", map[string]any{"schema": t.InputSchema})
}

// listSkills lists the server's skills, which reads none of their files.
func listSkills(ctx context.Context, cl *conduit.Client, _ *scenarioContext) error {
	sks, err := skills.List(ctx, cl, nil)
	if err != nil {
		return fmt.Errorf("listing skills: %w", err)
	}
	log.Printf("%d skills listed", len(sks))
	return nil
}

// useSkills loads each skill listed, then reads its other files, as an agent
// would once it needs them. A skill that fails its checks is neither used
// nor read further.
func useSkills(ctx context.Context, cl *conduit.Client, _ *scenarioContext) error {
	sks, err := skills.List(ctx, cl, nil)
	if err != nil {
		return fmt.Errorf("listing skills: %w", err)
	}
	for _, sk := range sks {
		if _, err := skills.Load(ctx, cl, sk, nil); err != nil {
			return fmt.Errorf("loading skill %s: %w", sk.Name, err)
		}
		for _, f := range sk.Files {
			if f.URI == sk.URI {
				continue
			}
			if _, err := skills.ReadFile(ctx, cl, sk, f.URI, nil); err != nil {
				return fmt.Errorf("skill %s: %w", sk.Name, err)
			}
		}
	}
	return nil
}
