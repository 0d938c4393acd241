// Command conformance-backend is a plain MCP server. It has the tools and
// skills the conformance suite's extension scenarios call. It makes no
// tasks of its own. So every task the suite sees through conduit serve is
// conduit's. It serves stdio, or Streamable HTTP with -http.
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	httpAddr := flag.String("http", "", "serve Streamable HTTP (stateless) on this address instead of stdio")
	flag.Parse()
	server := mcp.NewServer(&mcp.Implementation{Name: "conformance-backend", Version: "1.0.0"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{
			Logging:    &mcp.LoggingCapabilities{},
			Extensions: map[string]any{skillsExtension: map[string]any{"directoryRead": true}},
		},
	})
	// Each feature registers its own tools, in a file of its own.
	addTaskTools(server)
	if err := addSkills(server); err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *httpAddr != "" {
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
		srv := &http.Server{Addr: *httpAddr, Handler: h}
		go func() {
			<-ctx.Done()
			srv.Close()
		}()
		log.Printf("conformance-backend listening on %s", *httpAddr)
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			log.Fatal(err)
		}
		return
	}
	if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		log.Fatal(err)
	}
}
