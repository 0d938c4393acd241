// Tests of the turn machine alone, without a driver.

package turn_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/conduitmcp/conduit/internal/turn"
)

// jobs sums up jobs as index:what.
func jobs(js []turn.Job) string {
	s := ""
	for _, j := range js {
		what := "send"
		switch {
		case j.Halted:
			what = "halted"
		case !j.Sends():
			what = "deny"
		}
		s += fmt.Sprintf("%d:%s ", j.Index, what)
	}
	return s
}

// Three calls: the first answered, the two others deferred. A denial
// with a halt halts the call allowed with it and the one left waiting.
// Check refuses a key that waits for nothing and changes nothing.
func TestMachineHalt(t *testing.T) {
	m := turn.NewMachine(1000, []turn.Call{{Index: 0, Key: "a", Budget: 500}, {Index: 2, Key: "b", Budget: 500}, {Index: 3, Key: "c", Budget: 500}})
	if got := jobs(m.Start()); got != "0:send 2:send 3:send " {
		t.Fatalf("start %q", got)
	}
	for i, o := range map[int]turn.Outcome{0: {}, 2: {Waiting: true}, 3: {Waiting: true}} {
		if err := m.Settle(i, o); err != nil {
			t.Fatal(err)
		}
	}
	if m.Settle(1, turn.Outcome{}) == nil {
		t.Error("a position with no call settled")
	}
	p, ok := m.Plan()
	if !ok || fmt.Sprint(p.Indexes) != "[0]" || fmt.Sprint(p.Step.Waiting) != "[500 500]" || p.Step.Turn != 1000 {
		t.Fatalf("plan %+v", p)
	}
	if err := m.Wrote(0, turn.Written{Demand: 100, Kept: 100}); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Plan(); ok {
		t.Error("a plan with nothing to write")
	}
	var unknown *turn.UnknownError
	if err := m.Check(map[string]turn.Decision{"zz": {}}); !errors.As(err, &unknown) {
		t.Errorf("check: %v", err)
	}
	if fmt.Sprint(m.Waiting()) != "[2 3]" || m.Halted() {
		t.Fatalf("after the check: waiting %v, halted %v", m.Waiting(), m.Halted())
	}
	js, err := m.Decide(map[string]turn.Decision{"b": {Halt: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := jobs(js); got != "2:deny 3:halted " || !m.Halted() || len(m.Waiting()) != 0 {
		t.Errorf("decided %q, halted %v, waiting %v", got, m.Halted(), m.Waiting())
	}
	if j := m.Launch(turn.Job{Index: 3}); !j.Halted {
		t.Error("a call launched in a halted turn is sent")
	}
	_ = m.Settle(2, turn.Outcome{})
	_ = m.Settle(3, turn.Outcome{})
	p, _ = m.Plan()
	if fmt.Sprint(p.Indexes) != "[2 3]" || fmt.Sprint(p.Step.Before) != "[{100 100}]" || len(p.Step.Waiting) != 0 {
		t.Errorf("the last plan %+v", p)
	}
	_ = m.Wrote(2, turn.Written{})
	_ = m.Wrote(3, turn.Written{})
	if !m.Complete() {
		t.Error("not complete")
	}
}

// An approver's halt in the first run answers the calls deferred as
// halted; an allowed call of a turn not halted is sent with its input.
func TestMachineHalting(t *testing.T) {
	m := turn.NewMachine(0, []turn.Call{{Index: 0, Key: "a"}, {Index: 1, Key: "b"}})
	_ = m.Settle(0, turn.Outcome{Waiting: true})
	if js := m.Halting(); js != nil {
		t.Errorf("halting a turn not halted: %v", js)
	}
	_ = m.Settle(1, turn.Outcome{Halt: true})
	if got := jobs(m.Halting()); got != "0:halted " {
		t.Errorf("halting %q", got)
	}
	m = turn.NewMachine(0, []turn.Call{{Index: 0, Key: "a"}})
	_ = m.Settle(0, turn.Outcome{Waiting: true})
	js, err := m.Decide(map[string]turn.Decision{"a": {Allow: true}})
	if err != nil || jobs(js) != "0:send " || js[0].Decision == nil || !js[0].Decision.Allow {
		t.Errorf("allowed: %v %v", js, err)
	}
}
