// The turn machine: the state of one turn's calls, and the next step.

package turn

import (
	"fmt"
	"slices"

	"github.com/conduitmcp/conduit"
)

// Call is a call of the turn, as the Machine sees it.
type Call struct {
	// Index is its position in the model's response.
	Index int
	// Key names it in decisions (Keys).
	Key string
	// Budget is its own budget within the turn (Within), 0 for none.
	Budget int
}

// Job is one step a driver takes for one call: send it, or answer it
// without sending it.
type Job struct {
	// Index is the call's position in the response.
	Index int
	// Decision is a waiting call's decision. It is nil for a first run.
	Decision *Decision
	// Input is what an allowed call deferred for input goes on with. It
	// holds the server's requests and every answer given.
	Input *conduit.Input
	// Halted answers the call as halted, sending nothing.
	Halted bool
}

// Sends reports whether the job may send its call.
func (j Job) Sends() bool { return !j.Halted && (j.Decision == nil || j.Decision.Allow) }

// Outcome is what a driver reports of a job.
type Outcome struct {
	// Waiting: the call waits for a decision. Input is what its server
	// asked, for a call deferred for input.
	Waiting bool
	Input   *conduit.Input
	// Halt: the answer halts the turn.
	Halt bool
	// Written is set when the answer is already written. Else the answer
	// waits for the next Plan.
	Written *Written
}

// status is where a call of the machine is.
type status int

const (
	running status = iota // a job runs it
	waiting               // it waits for a decision
	done                  // its outcome waits to be written
	written               // answered
)

type call struct {
	Call
	status  status
	input   *conduit.Input
	written Written
}

// Machine is one turn's state. It does no I/O. It says what to do
// next, and each driver does it its own way: jobs to run, a step of
// answers to write, calls to show a person. A driver reports back
// with Settle and Wrote. Its order is the model's throughout. So the
// same outcomes give the same answers, whatever drives it. A Machine
// is not safe for concurrent use.
type Machine struct {
	budget int
	calls  []call
	halted bool
}

// NewMachine is the machine of a turn of budget (Budget, 0 for none)
// over calls, in the model's order. Every call starts running.
func NewMachine(budget int, calls []Call) *Machine {
	m := &Machine{budget: budget, calls: make([]call, len(calls))}
	for k, c := range calls {
		m.calls[k] = call{Call: c}
	}
	return m
}

// Budget is the turn's budget, 0 for none.
func (m *Machine) Budget() int { return m.budget }

// Start returns the first jobs: every call, in order.
func (m *Machine) Start() []Job {
	jobs := make([]Job, len(m.calls))
	for k, c := range m.calls {
		jobs[k] = Job{Index: c.Index}
	}
	return jobs
}

// Launch is job j as it is to be launched now. A call allowed to be
// sent is answered as halted once the turn is halted.
func (m *Machine) Launch(j Job) Job {
	if m.halted && (j.Decision == nil || j.Decision.Allow) {
		j.Halted = true
	}
	return j
}

// at is the call at position index, or nil.
func (m *Machine) at(index int) *call {
	for k := range m.calls {
		if m.calls[k].Index == index {
			return &m.calls[k]
		}
	}
	return nil
}

// Settle records the outcome of the call at position index.
func (m *Machine) Settle(index int, o Outcome) error {
	c := m.at(index)
	if c == nil {
		return fmt.Errorf("turn: no call at position %d", index)
	}
	m.halted = m.halted || o.Halt
	switch {
	case o.Waiting:
		c.status, c.input = waiting, o.Input
	case o.Written != nil:
		c.status, c.written = written, *o.Written
	default:
		c.status = done
	}
	return nil
}

// Halt halts the turn, as a halt outside its calls does.
func (m *Machine) Halt() { m.halted = true }

// Halted reports whether the turn is halted.
func (m *Machine) Halted() bool { return m.halted }

// Halting returns the jobs that answer the calls still waiting as
// halted, once the turn is halted. Every call is answered then, and the
// loop ends. It returns none otherwise.
func (m *Machine) Halting() []Job {
	if !m.halted {
		return nil
	}
	var jobs []Job
	for k := range m.calls {
		if c := &m.calls[k]; c.status == waiting {
			c.status = running
			jobs = append(jobs, Job{Index: c.Index, Halted: true})
		}
	}
	return jobs
}

// Waiting returns the positions of the calls that wait for a decision,
// in order.
func (m *Machine) Waiting() []int {
	var out []int
	for _, c := range m.calls {
		if c.status == waiting {
			out = append(out, c.Index)
		}
	}
	return out
}

// Complete reports whether every call is answered.
func (m *Machine) Complete() bool {
	for _, c := range m.calls {
		if c.status != written {
			return false
		}
	}
	return true
}

// waitingCalls are the calls waiting, as Decide sees them.
func (m *Machine) waitingCalls() ([]Waiting, []*call) {
	var ws []Waiting
	var cs []*call
	for k := range m.calls {
		if c := &m.calls[k]; c.status == waiting {
			ws = append(ws, Waiting{Key: c.Key, Input: c.input})
			cs = append(cs, c)
		}
	}
	return ws, cs
}

// Check checks decisions as Decide does, changing nothing.
func (m *Machine) Check(decisions map[string]Decision) error {
	ws, _ := m.waitingCalls()
	_, _, err := Decide(ws, decisions)
	return err
}

// Decide takes decisions on waiting calls, by key. It returns the jobs
// they make, in the model's order. A denial with a halt halts the turn.
// Then the calls allowed with it are answered as halted, unsent. So
// are the calls still waiting. A call allowed in a halted turn is
// answered as halted too. The errors are Decide's: it then decides
// nothing.
func (m *Machine) Decide(decisions map[string]Decision) ([]Job, error) {
	ws, cs := m.waitingCalls()
	at, inputs, err := Decide(ws, decisions)
	if err != nil {
		return nil, err
	}
	for _, k := range at {
		if d := decisions[cs[k].Key]; !d.Allow && d.Halt {
			m.halted = true
		}
	}
	var jobs []Job
	for _, k := range at {
		d := decisions[cs[k].Key]
		cs[k].status = running
		jobs = append(jobs, m.Launch(Job{Index: cs[k].Index, Decision: &d, Input: inputs[k]}))
	}
	jobs = append(jobs, m.Halting()...)
	slices.SortFunc(jobs, func(a, b Job) int { return a.Index - b.Index })
	return jobs, nil
}

// Plan is a step of answers to write. Step is complete but for its
// Done: the driver puts there the results at Indexes, in that order.
type Plan struct {
	Indexes []int
	Step    Step
}

// Plan returns the step that answers the calls done and not written.
// It shares the turn's budget over them, the answers written before and
// the calls still waiting or running. It returns false when no answer
// waits to be written.
func (m *Machine) Plan() (Plan, bool) {
	p := Plan{Step: Step{Turn: m.budget}}
	for _, c := range m.calls {
		switch c.status {
		case done:
			p.Indexes = append(p.Indexes, c.Index)
			p.Step.Budgets = append(p.Step.Budgets, c.Budget)
		case written:
			p.Step.Before = append(p.Step.Before, c.written)
		default:
			// It may yet produce its whole budget.
			p.Step.Waiting = append(p.Step.Waiting, c.Budget)
		}
	}
	return p, len(p.Indexes) > 0
}

// Wrote records the answer written for the call at position index.
func (m *Machine) Wrote(index int, w Written) error {
	return m.Settle(index, Outcome{Written: &w})
}
