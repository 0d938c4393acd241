package otelconduit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/otelconduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A hub whose calls become spans. Here the spans stay in memory; a
// program hands New its own TracerProvider and MeterProvider (or sets the
// global ones), with an OTLP exporter.
func ExampleNew() {
	ctx := context.Background()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer tp.Shutdown(ctx)

	tel, err := otelconduit.New(&otelconduit.Options{
		TracerProvider: tp,
		Propagator:     propagation.TraceContext{}, // traceparent in each request's _meta
	})
	if err != nil {
		log.Fatal(err)
	}

	// An in-process MCP server with one tool.
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pasta on Friday"}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()

	hub, err := conduit.NewHub(ctx, []conduit.Server{{ID: "notes", Transport: ct}}, &conduit.Options{Policy: conduit.NewPolicy(conduit.Allow("notes/search")),
		Trace: tel.Trace()})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	conv, err := adapters.NewConversation(ctx, hub, adapters.Anthropic, &adapters.ConversationOptions{TurnOptions: adapters.TurnOptions{Trace: tel.AdaptersTrace()}})
	if err != nil {
		log.Fatal(err)
	}
	// conv.Tools() goes into the request to the model; its response comes
	// back to Execute.
	response := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"notes__search","input":{"query":"pasta"}}]}`
	if _, err := conv.Execute(ctx, json.RawMessage(response)); err != nil {
		log.Fatal(err)
	}

	for _, span := range exporter.GetSpans() {
		fmt.Println(span.Name, span.SpanKind)
		for _, kv := range span.Attributes {
			switch kv.Key {
			case "mcp.method.name", "gen_ai.tool.name", "gen_ai.tool.call.id", "conduit.server", "conduit.list.items":
				fmt.Printf("  %s=%s\n", kv.Key, kv.Value.Emit())
			}
		}
		for _, e := range span.Events {
			fmt.Println("  event", e.Name)
		}
	}
	// Output:
	// tools/list client
	//   mcp.method.name=tools/list
	//   conduit.server=notes
	//   conduit.list.items=1
	// tools/call search client
	//   mcp.method.name=tools/call
	//   gen_ai.tool.name=search
	//   gen_ai.tool.call.id=toolu_01
	//   conduit.server=notes
	//   event conduit.policy.decision
}

// conduit serve's side: a gateway whose sessions trace each request they
// receive as a SERVER span, the parent of the hub's CLIENT span for the
// call it makes.
func ExampleTelemetry_ServerMiddleware() {
	ctx := context.Background()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer tp.Shutdown(ctx)
	tel, err := otelconduit.New(&otelconduit.Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	if err != nil {
		log.Fatal(err)
	}

	// The server's lists change only when it says so: its cache hint
	// (protocol 2026-07-28) lets the gateway keep them, and the span of a
	// listing does not come among the call's.
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = 3_600_000 },
	})
	srv.AddTool(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pasta on Friday"}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()

	g, err := gateway.New(ctx, []conduit.Server{{ID: "notes", Transport: ct}}, &gateway.Options{
		Hub:        &conduit.Options{Policy: conduit.AllowAll(), Trace: tel.Trace()},
		Middleware: []mcp.Middleware{tel.ServerMiddleware()},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	// A client of the gateway, in process; conduit serve has one over
	// stdio or HTTP.
	gct, gst := mcp.NewInMemoryTransports()
	go g.Serve(ctx, gst, nil)
	client, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, gct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	exporter.Reset()
	if _, err := client.CallTool(ctx, &mcp.CallToolParams{Name: "notes__search", Arguments: map[string]any{}}); err != nil {
		log.Fatal(err)
	}

	spans := exporter.GetSpans()
	ids := map[string]string{}
	for _, span := range spans {
		ids[span.SpanContext.SpanID().String()] = span.Name
	}
	for _, span := range spans {
		fmt.Printf("%s (%s), parent: %q\n", span.Name, span.SpanKind, ids[span.Parent.SpanID().String()])
	}
	// Output:
	// tools/call search (client), parent: "tools/call notes__search"
	// tools/call notes__search (server), parent: ""
}
