package adapters_test

import (
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit/adapters"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ExampleSanitizeName() {
	for _, name := range []string{"get_issue", "files.read", "fs/list dir", "9lives", "日本"} {
		fmt.Println(adapters.SanitizeName(name))
	}
	long := adapters.SanitizeName("a_very_long_tool_name_that_goes_on_and_on_well_past_the_limit_of_64")
	fmt.Println(long, len(long))
	// Output:
	// get_issue
	// files_read
	// fs_list_dir
	// _9lives
	// ___
	// a_very_long_tool_name_that_goes_on_and_on_well_past_the_313c2da4 64
}

func ExampleShapeForModel() {
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "Here is the chart:"},
		&mcp.ImageContent{MIMEType: "image/svg+xml", Data: make([]byte, 1024)},
		&mcp.AudioContent{MIMEType: "audio/aac", Data: make([]byte, 300)},
		&mcp.ResourceLink{URI: "file:///report.pdf", Name: "report"},
	}}
	for _, c := range adapters.ShapeForModel(res).Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Println("text:", c.Text)
		case *mcp.ResourceLink:
			fmt.Println("link:", c.URI) // never fetched
		}
	}
	// Output:
	// text: Here is the chart:
	// text: [image: image/svg+xml, 1024 bytes]
	// text: [audio: audio/aac, 300 bytes]
	// link: file:///report.pdf
}

func ExampleCutForModel() {
	var log strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&log, "12:00:%02d request %d served in 3 ms\n", i%60, i)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: log.String()}}}
	cut, tokens := adapters.CutForModel(res, 100)
	fmt.Println("about", tokens, "tokens before")
	for _, c := range cut.Content {
		fmt.Println(c.(*mcp.TextContent).Text)
	}
	// Output:
	// about 31001 tokens before
	// 12:00:01 request 1 served in 3 ms
	// 12:00:02 request 2 served in 3 ms
	// 12:00:03 request 3 served in 3 ms
	// 12:00:04 request 4 served in 3 ms
	// 12:00:05 request 5 served in 3 ms
	// 12:00:06 request 6 served in 3 ms
	//
	// [conduit: the result was cut to fit its budget of 100 tokens: kept the first 6 of 2000 lines (204 bytes of 71.2 KB, about 90 of 31001 tokens). Ask for less at a time (a narrower query, a smaller range or page), if the tool allows it.]
}
