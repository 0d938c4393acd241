package conduit

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Decision is what a policy says of a call.
type Decision int

// The decisions. The zero value is DecisionDeny, so an unset decision is
// the safe one.
const (
	DecisionDeny Decision = iota
	DecisionAllow
	DecisionAsk
)

// String returns "allow", "ask" or "deny".
func (d Decision) String() string {
	switch d {
	case DecisionAllow:
		return "allow"
	case DecisionAsk:
		return "ask"
	}
	return "deny"
}

// Condition is a predicate over a call that restricts a [Rule]. When a
// tool set is listed for a principal, conditions see a Call whose Args is
// nil.
type Condition func(c *Call) bool

// Tainted holds when the call's taint set contains one of servers, or, with
// no servers, when it holds any taint at all.
func Tainted(servers ...string) Condition {
	servers = slices.Clone(servers)
	return func(c *Call) bool {
		if len(servers) == 0 {
			return len(c.Taint) > 0
		}
		for _, t := range c.Taint {
			if slices.Contains(servers, t) {
				return true
			}
		}
		return false
	}
}

// Principal holds when the call is made for one of ids.
func Principal(ids ...string) Condition {
	ids = slices.Clone(ids)
	return func(c *Call) bool { return slices.Contains(ids, c.Principal) }
}

// Not holds when cond does not.
func Not(cond Condition) Condition { return func(c *Call) bool { return !cond(c) } }

// Rule is one line of a [Policy]: a decision for the calls whose
// server/tool matches one of its patterns and that meet all its conditions.
//
// A pattern is "server/tool", each part a [path.Match] glob: "github/get_*",
// "*/read_*". A pattern without "/" names servers: "github" is "github/*",
// and "*" matches every tool. Tool parts match the tool's own name on its
// server, not its exposed name; in them '*' matches '/' too.
type Rule struct {
	decision Decision
	patterns []pattern
	conds    []Condition
	text     string
	err      error
}

type pattern struct{ server, tool string }

// Allow returns a rule that allows the matching calls.
func Allow(patterns ...string) Rule { return newRule(DecisionAllow, patterns) }

// Ask returns a rule that sends the matching calls to the approver.
func Ask(patterns ...string) Rule { return newRule(DecisionAsk, patterns) }

// Deny returns a rule that refuses the matching calls.
func Deny(patterns ...string) Rule { return newRule(DecisionDeny, patterns) }

func newRule(d Decision, patterns []string) Rule {
	r := Rule{decision: d, text: d.String() + " " + strings.Join(patterns, ",")}
	if len(patterns) == 0 {
		r.err = fmt.Errorf("conduit: %s rule without patterns", d)
	}
	for _, p := range patterns {
		server, tool, ok := strings.Cut(p, "/")
		if !ok {
			tool = "*"
		}
		if server == "" || tool == "" {
			r.err = fmt.Errorf("conduit: policy pattern %q: want \"server/tool\" or \"server\", each part non-empty", p)
		}
		for _, part := range []string{server, tool} {
			if _, err := path.Match(part, ""); err != nil {
				r.err = fmt.Errorf("conduit: policy pattern %q: %w", p, err)
			}
		}
		r.patterns = append(r.patterns, pattern{server, slashless(tool)})
	}
	return r
}

// When returns a copy of r that applies only when every condition holds.
func (r Rule) When(conds ...Condition) Rule {
	r.conds = append(slices.Clip(r.conds), conds...)
	r.text += " (when ...)"
	return r
}

// String describes the rule, for logs and approval prompts.
func (r Rule) String() string { return r.text }

func (r *Rule) matches(c *Call) bool {
	return r.matchesName(c.Server, c.Tool) && r.holds(c)
}

// matchesName reports whether one of r's patterns matches server/tool.
func (r *Rule) matchesName(server, tool string) bool {
	if r.err != nil {
		return false
	}
	tool = slashless(tool)
	for _, p := range r.patterns {
		if globMatch(p.server, server) && globMatch(p.tool, tool) {
			return true
		}
	}
	return false
}

// holds reports whether all of r's conditions hold for c.
func (r *Rule) holds(c *Call) bool {
	for _, cond := range r.conds {
		if cond != nil && !cond(c) {
			return false
		}
	}
	return true
}

func globMatch(pattern, name string) bool {
	if pattern == "*" {
		return true
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// slashless hides '/' from path.Match, whose '*' stops at it: tool names
// may hold '/', and "fs/*" must match them all.
func slashless(s string) string { return strings.ReplaceAll(s, "/", "\x00") }

// Policy is an ordered list of rules: the first rule that matches a call
// decides, and a call that no rule matches is denied. A Policy is immutable
// and safe for concurrent use.
type Policy struct {
	rules []Rule
	err   error
}

// NewPolicy returns a policy of rules, in order. A malformed pattern makes
// its rule match nothing and is reported by [Policy.Err]; NewClient and
// NewHub refuse such a policy.
func NewPolicy(rules ...Rule) *Policy {
	p := &Policy{rules: slices.Clone(rules)}
	var errs []error
	for _, r := range rules {
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	p.err = errors.Join(errs...)
	return p
}

// AllowAll returns a policy that allows every call: an explicit choice for
// a hub whose servers are all trusted.
func AllowAll() *Policy { return NewPolicy(Allow("*")) }

// Err reports malformed rules.
func (p *Policy) Err() error { return p.err }

// Decide returns the decision for c and the rule that made it; ok is false
// when no rule matched (and the decision is deny).
func (p *Policy) Decide(c *Call) (d Decision, rule Rule, ok bool) {
	for i := range p.rules {
		if p.rules[i].matches(c) {
			return p.rules[i].decision, p.rules[i], true
		}
	}
	return DecisionDeny, Rule{}, false
}

// decide is p.Decide for the pipeline: a condition that panics is an error,
// never a decision. Which rules' patterns match a tool of c.Def's tool set
// is worked out once, and only conditions are evaluated per call.
func decide(p *Policy, c *Call) (d Decision, rule Rule, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, rule, ok, err = DecisionDeny, Rule{}, false, fmt.Errorf("policy condition panicked: %v", r)
		}
	}()
	if t := c.Def; t != nil && t.Server == c.Server && t.Name == c.Tool {
		for _, i := range p.matching(t) {
			if p.rules[i].holds(c) {
				return p.rules[i].decision, p.rules[i], true, nil
			}
		}
		return DecisionDeny, Rule{}, false, nil
	}
	d, rule, ok = p.Decide(c)
	return d, rule, ok, nil
}

// policyMemo is the key under which a tool keeps which of a policy's rules
// match its name.
type policyMemo struct{ p *Policy }

// matching returns the indexes of the rules whose patterns match t, in
// order.
func (p *Policy) matching(t *Tool) []int {
	return t.Memo(policyMemo{p}, func() any {
		var idx []int
		for i := range p.rules {
			if p.rules[i].matchesName(t.Server, t.Name) {
				idx = append(idx, i)
			}
		}
		return idx
	}).([]int)
}
