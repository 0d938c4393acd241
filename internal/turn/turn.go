// Package turn is the turn of a model's tool calls, written once. It
// does no I/O. Its Machine holds a turn's state and says what comes
// next: jobs to run, answers to write, calls to show a person. Each
// driver does that its own way. adapters.Conversation runs the calls
// directly. temporalconduit's workflow runs them as activities. So each
// rule of the turn is written here once:
//
//   - which id names a call in decisions;
//   - which decisions are taken;
//   - how a halt answers the calls left, those waiting included;
//   - how each result's budget is resolved;
//   - how the turn's budget is shared.
//
// The budget is shared in one step, or in several when calls wait for
// decisions.
//
// A turn's budget is shared max-min fairly over the results' demands.
// Each result asks for its size up to its own budget. A result within an
// equal share keeps all of it. The larger ones share the rest equally.
// A turn answered in steps shares its budget over three kinds of demand:
//
//   - the answers written before, which are not written again;
//   - the results answered now;
//   - the calls still pending, each holding its own budget.
package turn

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/adapters/driver"
	"github.com/conduitmcp/conduit/adapters/toolcall"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxTurnTokens is a turn's budget when nothing sets one. It is
// 50,000 tokens, two full results. That is a quarter of a 200,000-token
// context.
const DefaultMaxTurnTokens = 50000

// Budget is a turn's budget in tokens from its setting, 0 for none. A
// setting of 0 means the default. A negative one means none.
func Budget(setting int) int {
	switch {
	case setting == 0:
		return DefaultMaxTurnTokens
	case setting < 0:
		return 0
	}
	return setting
}

// ResultBudget is a result's own budget in tokens, 0 for none. The first
// of its settings that is set decides. The settings are the call's, its
// server's and the conversation's. When none is set, it is
// toolcall.DefaultMaxResultTokens. Negative is none.
func ResultBudget(settings ...int) int {
	for _, n := range settings {
		if n != 0 {
			return toolcall.Budget{Tokens: n}.Resolved()
		}
	}
	return toolcall.DefaultMaxResultTokens
}

// Within is a result budget b within a turn's budget turn. For either, 0
// means none. The result is 0 for none. No result alone is over the
// turn's budget.
func Within(b, turn int) int {
	if turn > 0 && (b == 0 || b > turn) {
		return turn
	}
	return b
}

// Written is an answer of the turn written in an earlier step. It holds
// its demand on the turn's budget, and the tokens it kept.
type Written struct{ Demand, Kept int }

// Step is one step of answering a turn. It holds the calls done now, the
// answers written before, and the calls still pending.
type Step struct {
	// Turn is the turn's budget (Budget), 0 for none.
	Turn int
	// Done are the answers to write now, in the model's order. Budgets
	// holds each one's own budget within the turn (Within; 0 for none).
	Done    []driver.Pending
	Budgets []int
	// Before are the answers written in earlier steps.
	Before []Written
	// Waiting are the own budgets (Within) of the calls still pending.
	Waiting []int
}

// Cut is what a Step decides for one answer written now.
type Cut struct {
	// Budget is the budget to write it within. It is a token count, or -1
	// for none, as toolcall.Budget means it.
	Budget int
	// Over reports that the result is over its budget, and will be cut.
	Over bool
	// Demand is the answer's demand on the turn's budget. It is its size
	// up to its own budget. A later step counts it as Written.Demand.
	Demand int
}

// Share decides the budget of each answer of s.Done. Each result is
// measured no further than its budget needs. The shares of the whole
// turn may have the results answered now take more than the answers
// written before left. Then they share only what those answers left. An
// answer is written once. The room a pending call held and did not use
// is not given back to it.
func (s Step) Share() []Cut {
	cuts := make([]Cut, len(s.Done))
	demand := make([]int, len(s.Done))
	total := 0
	for k, p := range s.Done {
		b := s.Budgets[k]
		n := p.Tokens(b)
		cuts[k] = Cut{Budget: b, Over: b > 0 && n > b, Demand: n}
		if b > 0 {
			cuts[k].Demand = min(n, b)
		}
		demand[k] = cuts[k].Demand
		total += demand[k]
	}
	var others []int
	spent := 0
	if s.Turn > 0 {
		for _, w := range s.Before {
			others = append(others, w.Demand)
			spent += w.Kept
			total += w.Demand
		}
		for _, b := range s.Waiting {
			others = append(others, b)
			total += b
		}
	}
	if s.Turn > 0 && total > s.Turn {
		all := Fair(append(slices.Clip(demand), others...), s.Turn)
		shares, held := all[:len(demand)], all[len(demand)+len(s.Before):]
		if taken(shares, demand)+sum(held) > s.Turn-spent {
			shares = Fair(append(slices.Clip(demand), others[len(s.Before):]...), max(s.Turn-spent, 0))[:len(demand)]
		}
		for k, share := range shares {
			if share < demand[k] {
				cuts[k].Budget, cuts[k].Over = max(share, 1), true
			}
		}
	}
	for k := range cuts {
		if cuts[k].Budget == 0 {
			cuts[k].Budget = -1
		}
	}
	return cuts
}

// Fair shares total max-min fairly among demands. A demand within an
// equal share of what is left gets all of it. The larger ones share the
// rest equally.
func Fair(demands []int, total int) []int {
	shares := make([]int, len(demands))
	left, open := total, len(demands)
	done := make([]bool, len(demands))
	for open > 0 && left > 0 {
		each := left / open
		settled := false
		for i, n := range demands {
			if !done[i] && n <= each {
				shares[i], done[i] = n, true
				left -= n
				open--
				settled = true
			}
		}
		if !settled {
			for i := range demands {
				if !done[i] {
					shares[i] = each
				}
			}
			break
		}
	}
	return shares
}

func sum(ns []int) int {
	n := 0
	for _, x := range ns {
		n += x
	}
	return n
}

// taken is what results of these demands take of their shares.
func taken(shares, demand []int) int {
	n := 0
	for k, s := range shares {
		n += min(s, demand[k])
	}
	return n
}

// Keys returns the key each call is named by while it waits for a
// decision. It is given the calls' ids and their positions in the
// response. The key is the call's id. It is id#N instead when the id is
// empty or not unique among ids. N is the call's position from 1. Calls
// that did not resolve are not among them.
func Keys(ids []string, pos []int) []string {
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		k := id
		if k == "" || seen[k] > 1 {
			k += "#" + strconv.Itoa(pos[i]+1)
		}
		keys[i] = k
	}
	return keys
}

// Waiting is a call that waits for a decision, as Decide sees it.
type Waiting struct {
	// Key names it in decisions (Keys).
	Key string
	// Input is what its server asked, for a call deferred for input.
	Input *conduit.Input
}

// Decision is a decision on a waiting call, as Decide sees it.
type Decision struct {
	Allow bool
	// Halt, with a denial, halts the turn.
	Halt bool
	// Input answers what the server asked, by the keys of its requests.
	Input mcp.InputResponseMap
}

// UnknownError is Decide's error for a decision that names no waiting
// call.
type UnknownError struct {
	Key     string
	Waiting []string // the keys of the calls waiting, in order
}

func (e *UnknownError) Error() string {
	return fmt.Sprintf("no call waits for a decision under the id %q (waiting: %s)", e.Key, strings.Join(e.Waiting, ", "))
}

// MissingError is Decide's error for a decision that allows a call
// deferred for input. The decision did not answer all its server asked.
type MissingError struct {
	Key     string
	Missing []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("the decision allowing %q answers none of its server's requests %s (adapters.Ruling.Input)", e.Key, strings.Join(e.Missing, ", "))
}

// Decide checks decisions, by key, against the calls waiting. It returns
// the positions in waiting that they decide, in order. It also returns
// the input each allowed call deferred for input goes on with. It fails,
// deciding nothing, in two cases:
//
//   - a decision names no waiting call (*UnknownError);
//   - a decision allows a call deferred for input without answering all its server asked (*MissingError).
//
// Keys are checked in sorted order. So the error is the same whatever the
// map's order.
func Decide(waiting []Waiting, decisions map[string]Decision) ([]int, map[int]*conduit.Input, error) {
	byKey := make(map[string]int, len(waiting))
	keys := make([]string, 0, len(waiting))
	for i, w := range waiting {
		byKey[w.Key] = i
		keys = append(keys, w.Key)
	}
	var out []int
	inputs := map[int]*conduit.Input{}
	for _, key := range slices.Sorted(maps.Keys(decisions)) {
		i, ok := byKey[key]
		if !ok {
			return nil, nil, &UnknownError{Key: key, Waiting: keys}
		}
		out = append(out, i)
		d, in := decisions[key], waiting[i].Input
		if !d.Allow || in == nil {
			continue
		}
		merged := in.WithResponses(d.Input)
		if missing := merged.Missing(); len(missing) > 0 {
			return nil, nil, &MissingError{Key: key, Missing: missing}
		}
		inputs[i] = merged
	}
	slices.Sort(out)
	return out, inputs, nil
}

// kinds are the sentinels of conduit.Error, one per kind.
var kinds = []*conduit.Error{
	conduit.ErrInternal, conduit.ErrUnknownTool, conduit.ErrInvalidArguments,
	conduit.ErrDenied, conduit.ErrApprovalRequired, conduit.ErrHalted,
	conduit.ErrTimeout, conduit.ErrCanceled, conduit.ErrUnavailable,
	conduit.ErrServerError, conduit.ErrLimit, conduit.ErrDeferred,
}

// Kind is the sentinel of the error kind named name (its String). Saved
// state and records write kinds by name. It returns false for a name no
// kind has.
func Kind(name string) (*conduit.Error, bool) {
	for _, k := range kinds {
		if k.String() == name {
			return k, true
		}
	}
	return nil, false
}
