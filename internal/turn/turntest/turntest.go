// Package turntest is the turn machine's shared table. Every driver of
// the machine runs it: adapters.Conversation and temporalconduit's
// workflow. The same response and decisions must give the same answers,
// pendings and halts, whatever drives the turn.
package turntest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters"
	"github.com/conduitmcp/conduit/adapters/adaptertest"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Provider is the provider every case is written for.
var Provider = adapters.Anthropic

// Case is one turn: the calls of one response, then rounds of decisions.
type Case struct {
	Name string
	// Calls are the model's calls, of the tools of Source.
	Calls []toolcall.Raw
	// MaxTurnTokens is the turn's budget, as the drivers' options say it.
	MaxTurnTokens int
	// Rounds are the decisions taken, in order, while calls wait.
	Rounds []map[string]adapters.Ruling
	// Pending are the ids waiting before each round.
	Pending [][]string
	// Refused are the rounds refused, by position.
	Refused []int
	// Answers sum up the turn's answers (Summary).
	Answers []string
	Halted  bool
}

// Outcome is what a driver saw of a case.
type Outcome struct {
	// Pending are the ids waiting before each round.
	Pending [][]string
	// Refused are the rounds refused, by position.
	Refused []int
	// Results answer every call, in the provider's shape.
	Results []map[string]any
	Halted  bool
}

// Driver runs a case over src, with the provider Provider.
type Driver func(t *testing.T, src conduit.Source, c Case) Outcome

// Call is a call of tool (sized, sized_ask or sized_stop) for n words.
func Call(id, tool string, n int) toolcall.Raw {
	return toolcall.Raw{ID: id, Name: tool, Args: map[string]any{"n": n}}
}

// Source is a client of an MCP server whose tools answer n words. The
// policy allows sized. It asks about sized_ask, which the approver
// defers. It asks about sized_stop, which the approver denies with a
// halt.
func Source(t testing.TB) *conduit.Client {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "sizes", Version: "1"}, nil)
	for _, name := range []string{"sized", "sized_ask", "sized_stop"} {
		mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "Answer n words."},
			func(_ context.Context, _ *mcp.CallToolRequest, in struct {
				N int `json:"n"`
			}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("word ", in.N)}}}, nil, nil
			})
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	pol := conduit.NewPolicy(conduit.Ask("sizes/sized_ask"), conduit.Ask("sizes/sized_stop"), conduit.Allow("sizes/*"))
	approver := func(_ context.Context, req conduit.ApprovalRequest) conduit.Approval {
		if req.Call.Tool == "sized_stop" {
			return conduit.RejectAndHalt("stop here")
		}
		return conduit.Defer("a person decides")
	}
	c, err := conduit.NewClient(context.Background(), conduit.Server{ID: "sizes", Transport: ct},
		&conduit.Options{Policy: pol, Approver: approver, Store: store.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Summary sums up each answer of results: its id, then "error: " and
// its text, or the number of words it kept.
func Summary(results []map[string]any) []string {
	var out []string
	for _, a := range adaptertest.FakeOf(Provider).Answered(Provider.Wire().Answers(results)) {
		if a.Error {
			out = append(out, a.ID+" error: "+a.Text)
			continue
		}
		out = append(out, fmt.Sprintf("%s %d words", a.ID, len(strings.Fields(a.Text))))
	}
	return out
}

// Cases is the table.
var Cases = []Case{
	{
		Name:    "answered at once",
		Calls:   []toolcall.Raw{Call("a", "sized", 10), Call("b", "sized", 20)},
		Answers: []string{"a 10 words", "b 20 words"},
	},
	{
		Name: "budget shared max-min",
		Calls: []toolcall.Raw{Call("a", "sized", 100), Call("b", "sized", 9000), Call("c", "sized", 300),
			Call("d", "sized", 4000)},
		MaxTurnTokens: 5000,
		Answers:       cutAnswers,
	},
	{
		Name: "budget shared max-min around a deferral",
		Calls: []toolcall.Raw{Call("a", "sized", 100), Call("b", "sized_ask", 9000), Call("c", "sized", 300),
			Call("d", "sized", 4000)},
		MaxTurnTokens: 5000,
		Rounds:        []map[string]adapters.Ruling{{"b": {Allow: true}}},
		Pending:       [][]string{{"b"}},
		Answers:       cutAnswers,
	},
	{
		Name:    "denied, allowed, then a decision on nothing",
		Calls:   []toolcall.Raw{Call("a", "sized_ask", 5), Call("b", "sized", 6), Call("c", "sized_ask", 7)},
		Rounds:  []map[string]adapters.Ruling{{"zz": {Allow: true}}, {"a": {Reason: "not that one"}}, {"c": {Allow: true}}},
		Pending: [][]string{{"a", "c"}, {"a", "c"}, {"c"}},
		Refused: []int{0},
		Answers: []string{"a error: The call to sized_ask was denied: not that one.", "b 6 words", "c 7 words"},
	},
	{
		Name:    "a denial with a halt halts the calls allowed with it and those left waiting",
		Calls:   []toolcall.Raw{Call("a", "sized_ask", 5), Call("b", "sized_ask", 6), Call("c", "sized_ask", 7)},
		Rounds:  []map[string]adapters.Ruling{{"a": {Reason: "no", Halt: true}, "b": {Allow: true}}},
		Pending: [][]string{{"a", "b", "c"}},
		Answers: []string{"a error: The call to sized_ask was denied: no.",
			"b error: The call to sized_ask was not made: the run was halted by an approver.",
			"c error: The call to sized_ask was not made: the run was halted by an approver."},
		Halted: true,
	},
	{
		Name:  "an approver's halt answers the calls deferred before it",
		Calls: []toolcall.Raw{Call("a", "sized_ask", 5), Call("b", "sized_stop", 6), Call("c", "sized", 7)},
		Answers: []string{"a error: The call to sized_ask was not made: the run was halted by an approver.",
			"b error: The call to sized_stop was denied: stop here.",
			"c error: The call to sized was not made: the run was halted by an approver."},
		Halted: true,
	},
	{
		Name:    "shared ids are keyed by position",
		Calls:   []toolcall.Raw{Call("x", "sized_ask", 1), Call("x", "sized_ask", 2), Call("y", "sized", 3)},
		Rounds:  []map[string]adapters.Ruling{{"x#1": {Allow: true}, "x#2": {Reason: "later"}}},
		Pending: [][]string{{"x#1", "x#2"}},
		Answers: []string{"x 1 words", "x error: The call to sized_ask was denied: later.", "y 3 words"},
	},
}

// cutAnswers are the answers of the max-min case: the small ones whole,
// the large ones cut alike to what is left.
var cutAnswers = []string{"a 100 words", "b 2343 words", "c 300 words", "d 2343 words"}

// Run runs the table with driver d, each case over a new Source.
func Run(t *testing.T, d Driver) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) {
			out := d(t, Source(t), c)
			if fmt.Sprint(out.Pending) != fmt.Sprint(c.Pending) {
				t.Errorf("pending %q, want %q", out.Pending, c.Pending)
			}
			if !slices.Equal(out.Refused, c.Refused) {
				t.Errorf("refused rounds %v, want %v", out.Refused, c.Refused)
			}
			if got := Summary(out.Results); !slices.Equal(got, c.Answers) {
				t.Errorf("answers\n%q\nwant\n%q", got, c.Answers)
			}
			if out.Halted != c.Halted {
				t.Errorf("halted %v, want %v", out.Halted, c.Halted)
			}
		})
	}
}
