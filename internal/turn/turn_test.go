// Tests of the turn's rules, as both loops apply them.

package turn_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/conduitmcp/conduit/internal/turn"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestFair(t *testing.T) {
	for _, c := range []struct {
		sizes []int
		total int
		want  []int
	}{
		{[]int{20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000, 20000}, 50000, []int{5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000}},
		{[]int{100, 90000, 3000, 40000}, 50000, []int{100, 23450, 3000, 23450}},
		{[]int{10, 20}, 50000, []int{10, 20}},
		{nil, 100, []int{}},
	} {
		got := turn.Fair(c.sizes, c.total)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Fair(%v, %d) = %v, want %v", c.sizes, c.total, got, c.want)
		}
	}
}

// sized is a result of a known size.
type sized int

func (s sized) Tokens(int) int { return int(s) }
func (s sized) Text() string   { return "" }
func (s sized) Write(toolcall.Budget) (map[string]any, toolcall.Budgeted) {
	return nil, toolcall.Budgeted{}
}

// The documented split: results of 100, 90,000, 3,000 and 40,000 tokens
// share the default turn budget as 100, 23,450, 3,000 and 23,450, the
// large ones cut to their budget of 25,000 first.
func TestStepShare(t *testing.T) {
	b := turn.Within(turn.ResultBudget(0, 0, 0), turn.Budget(0))
	s := turn.Step{Turn: turn.Budget(0), Done: []driver.Pending{sized(100), sized(90000), sized(3000), sized(40000)}, Budgets: []int{b, b, b, b}}
	var got []turn.Cut
	for _, c := range s.Share() {
		got = append(got, c)
	}
	want := []turn.Cut{{Budget: 25000, Demand: 100}, {Budget: 23450, Over: true, Demand: 25000}, {Budget: 25000, Demand: 3000}, {Budget: 23450, Over: true, Demand: 25000}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shares %v, want %v", got, want)
	}
	// A pending call holds its budget: two results of 30,000 share what
	// it leaves of 50,000.
	s = turn.Step{Turn: 50000, Done: []driver.Pending{sized(30000), sized(30000)}, Budgets: []int{25000, 25000}, Waiting: []int{25000}}
	if got := s.Share(); got[0].Budget != 16666 || got[1].Budget != 16666 {
		t.Errorf("beside a pending call: %v", got)
	}
	// Answers written before are not written again: what they kept is
	// taken off the turn first.
	s = turn.Step{Turn: 1000, Done: []driver.Pending{sized(900)}, Budgets: []int{1000}, Before: []turn.Written{{Demand: 800, Kept: 800}}}
	if got := s.Share(); got[0].Budget != 200 || !got[0].Over {
		t.Errorf("after an answer that kept 800 of 1000: %v", got)
	}
	// No turn budget: a result is within its own only.
	s = turn.Step{Done: []driver.Pending{sized(10)}, Budgets: []int{0}}
	if got := s.Share(); got[0].Budget != -1 || got[0].Over {
		t.Errorf("without budgets: %v", got)
	}
}

func TestResultBudget(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want int
	}{
		{[]int{0, 0, 0}, toolcall.DefaultMaxResultTokens}, {[]int{0, 500, 9}, 500}, {[]int{-1, 500, 9}, 0}, {[]int{0, 0, 9}, 9},
	} {
		if got := turn.ResultBudget(c.in...); got != c.want {
			t.Errorf("ResultBudget(%v) = %d, want %d", c.in, got, c.want)
		}
	}
	if turn.Budget(0) != turn.DefaultMaxTurnTokens || turn.Budget(-1) != 0 || turn.Budget(7) != 7 {
		t.Error("turn budget settings")
	}
	if turn.Within(0, 100) != 100 || turn.Within(200, 100) != 100 || turn.Within(50, 100) != 50 || turn.Within(50, 0) != 50 {
		t.Error("Within")
	}
}

func TestKeys(t *testing.T) {
	got := turn.Keys([]string{"a", "", "b", "b"}, []int{0, 2, 3, 5})
	if fmt.Sprint(got) != "[a #3 b#4 b#6]" {
		t.Errorf("keys %v", got)
	}
}

func TestDecide(t *testing.T) {
	in := &conduit.Input{Requests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "who?"}}}
	waiting := []turn.Waiting{{Key: "a"}, {Key: "b", Input: in}}
	got, inputs, err := turn.Decide(waiting, map[string]turn.Decision{"b": {}, "a": {Allow: true}})
	if err != nil || fmt.Sprint(got) != "[0 1]" || len(inputs) != 0 {
		t.Fatalf("decided %v %v %v", got, inputs, err)
	}
	_, _, err = turn.Decide(waiting, map[string]turn.Decision{"zz": {}, "a": {}})
	var unknown *turn.UnknownError
	if !errors.As(err, &unknown) || unknown.Key != "zz" || fmt.Sprint(unknown.Waiting) != "[a b]" {
		t.Errorf("an unknown key: %v", err)
	}
	_, _, err = turn.Decide(waiting, map[string]turn.Decision{"b": {Allow: true}})
	var missing *turn.MissingError
	if !errors.As(err, &missing) || missing.Key != "b" {
		t.Errorf("an allowed call without its input: %v", err)
	}
	ok := mcp.InputResponseMap{"who": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "Ada"}}}
	got, inputs, err = turn.Decide(waiting, map[string]turn.Decision{"b": {Allow: true, Input: ok}})
	if err != nil || fmt.Sprint(got) != "[1]" || inputs[1] == nil || len(inputs[1].Missing()) != 0 {
		t.Errorf("an allowed call with its input: %v %v %v", got, inputs, err)
	}
}
