// Runnable examples of the package's entry points, under Temporal's test
// suite: a worker's source, conduit's activities, a workflow with a
// Conversation, and a model activity of the application's (here a fake
// that calls a tool once, then answers).
package temporalconduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/pins"
	"github.com/conduitmcp/conduit/temporalconduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// ModelTurn is what the application's model activity returns: the
// response, the items to append to the conversation, and whether the
// model asked for tools.
type ModelTurn struct {
	Response json.RawMessage
	Items    []any
	ToolUse  bool
	Text     string
}

// Chat is an application's agent workflow: its model activity is
// "CallModel", conduit's Conversation runs the calls.
func Chat(ctx workflow.Context, prompt string) (string, error) {
	conv, err := temporalconduit.NewConversation(ctx, &temporalconduit.ConversationOptions{Provider: adapters.Anthropic})
	if err != nil {
		return "", err
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var messages []any
	var results []map[string]any
	for {
		var mt ModelTurn
		if err := workflow.ExecuteActivity(actx, "CallModel", conv.Offer(), prompt, messages, results).Get(ctx, &mt); err != nil {
			return "", err
		}
		messages = append(messages, mt.Items...)
		if !mt.ToolUse {
			return mt.Text, nil
		}
		turn, err := conv.Execute(ctx, mt.Response)
		if err != nil {
			return "", err
		}
		if turn.Halted {
			return "stopped", nil
		}
		results = turn.Results
	}
}

// callModel is the application's model activity, on a worker with
// conduit's activities: a fake of Claude that calls greet, then says
// what it got. A real one posts Wire.Request with the tools to the API.
func callModel(acts *temporalconduit.Activities) func(context.Context, temporalconduit.Offer, string, []any, []map[string]any) (ModelTurn, error) {
	wire, fake := adapters.Anthropic.Wire(), adaptertest.FakeOf(adapters.Anthropic)
	return func(ctx context.Context, offer temporalconduit.Offer, prompt string, messages []any, results []map[string]any) (ModelTurn, error) {
		tools, err := acts.Tools(ctx, offer) // the definitions of the request
		if err != nil {
			return ModelTurn{}, err
		}
		var mt ModelTurn
		if len(messages) == 0 {
			mt.Items = append(mt.Items, wire.Prompt(prompt))
		}
		mt.Items = append(mt.Items, wire.Answers(results)...)
		resp := fake.Response(fmt.Sprintf("%d tools offered", len(tools)),
			toolcall.Raw{ID: "toolu_1", Name: "greet", Args: map[string]any{"name": prompt}})
		if len(results) > 0 {
			resp = fake.Response("greeted: " + answerText(results[0]))
		}
		turn, err := wire.Turn(resp)
		if err != nil {
			return ModelTurn{}, err
		}
		mt.Response, _ = json.Marshal(resp)
		mt.Items = append(mt.Items, turn.Items...)
		mt.ToolUse, mt.Text = turn.ToolUse, turn.Text
		return mt, nil
	}
}

func answerText(r map[string]any) string {
	c, _ := r["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	t, _ := c[0].(map[string]any)["text"].(string)
	return t
}

// greeter is a worker's source: a conduit client of an MCP server (here
// in process) with a greet tool.
func greeter() *conduit.Client {
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greet someone."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, " + in.Name + "!"}}}, nil, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		log.Fatal(err)
	}
	src, err := conduit.NewClient(context.Background(), conduit.Server{ID: "greeter", Transport: ct},
		&conduit.Options{Policy: conduit.AllowAll()})
	if err != nil {
		log.Fatal(err)
	}
	return src
}

// A durable agent: a worker holds its source and registers conduit's
// activities beside the application's workflow and model activity.
func Example() {
	src := greeter()
	defer src.Close()

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment() // a worker.Worker in production
	acts, err := temporalconduit.Register(env, src, nil)
	if err != nil {
		log.Fatal(err)
	}
	env.RegisterActivityWithOptions(callModel(acts), activity.RegisterOptions{Name: "CallModel"})
	env.RegisterWorkflow(Chat)

	env.ExecuteWorkflow(Chat, "Ada")
	var answer string
	if err := env.GetWorkflowResult(&answer); err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer)
	// Output: greeted: Hello, Ada!
}

// Register on a worker: the worker holds the hub for its lifetime, made
// before it runs and closed after.
func ExampleRegister() {
	src := greeter() // conduit.NewHub(ctx, servers, &conduit.Options{...}) in production
	defer src.Close()

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment() // worker.New(client, taskQueue, worker.Options{})
	acts, err := temporalconduit.Register(env, src, &temporalconduit.Options{
		// Claims: a store/redisstore shared by every worker, so that a
		// retried call is never sent twice wherever it runs.
		Trusted: []string{"greeter"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(acts != nil)
	// Output: true
}

// An Offer names each tool by its definition's digest; Tools writes the
// definitions of those the worker's source still has, unchanged.
func ExampleActivities_Tools() {
	src := greeter()
	defer src.Close()

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	acts, err := temporalconduit.Register(env, src, nil)
	if err != nil {
		log.Fatal(err)
	}
	// A Conversation's Offer (Conversation.Offer), built here by hand.
	ts, err := src.ListTools(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	offer := temporalconduit.Offer{Provider: adapters.Anthropic.String()}
	for t := range ts.All() {
		dg, _ := pins.ToolDigest(t.Tool)
		offer.Tools = append(offer.Tools, temporalconduit.ToolRef{Server: t.Server, Tool: t.Name, Exposed: t.Exposed, Digest: dg})
	}
	tools, err := acts.Tools(context.Background(), offer)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tools[0]["name"], tools[0]["description"])
	// Output: greet Greet someone.
}

// NewConversation lists the tools (an activity), in a workflow.
func ExampleNewConversation() {
	src := greeter()
	defer src.Close()

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	if _, err := temporalconduit.Register(env, src, nil); err != nil {
		log.Fatal(err)
	}
	env.ExecuteWorkflow(func(ctx workflow.Context) ([]string, error) {
		conv, err := temporalconduit.NewConversation(ctx, &temporalconduit.ConversationOptions{
			Provider: adapters.OpenAIChat, Principal: "alice"})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, t := range conv.Offer().Tools {
			names = append(names, t.Exposed)
		}
		return names, nil
	})
	var names []string
	if err := env.GetWorkflowResult(&names); err != nil {
		log.Fatal(err)
	}
	fmt.Println(names)
	// Output: [greet]
}

// A conversation carried into a new run of the workflow
// (continue-as-new), as a long one is when its history grows.
func ExampleResumeConversation() {
	src := greeter()
	defer src.Close()

	loop := func(ctx workflow.Context, st *temporalconduit.State) (string, error) {
		o := &temporalconduit.ConversationOptions{Provider: adapters.Anthropic}
		if st == nil {
			conv, err := temporalconduit.NewConversation(ctx, o)
			if err != nil {
				return "", err
			}
			// ... turns, then, between two of them, when
			// workflow.GetInfo(ctx).GetContinueAsNewSuggested():
			next := conv.State()
			return "", workflow.NewContinueAsNewError(ctx, "loop", &next)
		}
		conv, err := temporalconduit.ResumeConversation(ctx, *st, o)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%d tool offered, %d turns so far", len(conv.Offer().Tools), conv.State().Turns), nil
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	var st *temporalconduit.State
	for {
		env := suite.NewTestWorkflowEnvironment()
		if _, err := temporalconduit.Register(env, src, nil); err != nil {
			log.Fatal(err)
		}
		env.RegisterWorkflowWithOptions(loop, workflow.RegisterOptions{Name: "loop"})
		env.ExecuteWorkflow("loop", st)
		var can *workflow.ContinueAsNewError
		if errors.As(env.GetWorkflowError(), &can) {
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &st); err != nil {
				log.Fatal(err)
			}
			continue
		}
		var out string
		if err := env.GetWorkflowResult(&out); err != nil {
			log.Fatal(err)
		}
		fmt.Println(out)
		break
	}
	// Output: 1 tool offered, 0 turns so far
}

// Execute runs a response's calls, each an activity, and answers them in
// the model's order.
func ExampleConversation_Execute() {
	src := greeter()
	defer src.Close()

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	if _, err := temporalconduit.Register(env, src, nil); err != nil {
		log.Fatal(err)
	}
	env.ExecuteWorkflow(func(ctx workflow.Context) (int, error) {
		conv, err := temporalconduit.NewConversation(ctx, &temporalconduit.ConversationOptions{Provider: adapters.Anthropic})
		if err != nil {
			return 0, err
		}
		// The response comes from the model activity; here, as Claude writes one.
		response := `{"role": "assistant", "stop_reason": "tool_use", "content": [
			{"type": "tool_use", "id": "toolu_1", "name": "greet", "input": {"name": "Grace"}},
			{"type": "tool_use", "id": "toolu_2", "name": "nope", "input": {}}]}`
		turn, err := conv.Execute(ctx, response)
		if err != nil {
			return 0, err
		}
		return len(turn.Results), nil
	})
	var n int
	if err := env.GetWorkflowResult(&n); err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "answers")
	// Output: 2 answers
}
