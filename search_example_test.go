package conduit_test

import (
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ExampleToolSet_Search() {
	// Most programs search what Hub.ListToolsFor listed for a principal;
	// NewToolSet makes a set by hand.
	ts := conduit.NewToolSet(&conduit.ToolSetOptions{Namespace: true},
		conduit.ServerTools{Server: "github", Tools: []*mcp.Tool{
			{Name: "create_pull_request", Description: "Create a new pull request in a GitHub repository"},
			{Name: "create_pull_request_review", Description: "Create a review on a pull request"},
			{Name: "list_issues", Description: "List issues in a GitHub repository"},
		}},
		conduit.ServerTools{Server: "kubernetes", Tools: []*mcp.Tool{
			{Name: "kubectl_logs", Description: "Get logs from Kubernetes resources like pods"},
		}},
	)
	for _, t := range ts.Search("open a PR", 2) {
		fmt.Println(t.Exposed)
	}
	// Scores order the matches of one query, best first.
	for _, r := range ts.SearchScored("list github repository issues", 5) {
		fmt.Println(r.Tool.Exposed, r.Score > 0)
	}
	fmt.Println(ts.Search("k8s pod logs", 5)[0].Exposed)
	// Output:
	// github__create_pull_request
	// github__create_pull_request_review
	// github__list_issues true
	// github__create_pull_request true
	// github__create_pull_request_review true
	// kubernetes__kubectl_logs
}
