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
// nil. [Tainted], [Principal] and [Not] make conditions; [ConditionFunc]
// makes one of a function.
type Condition interface {
	Holds(c *Call) bool
}

// ConditionFunc is a function used as a [Condition]:
//
//	conduit.Deny("files/write").When(conduit.ConditionFunc(func(c *conduit.Call) bool {
//		return c.Args["path"] == "/etc/passwd"
//	}))
type ConditionFunc func(c *Call) bool

// Holds returns f(c); a nil f holds.
func (f ConditionFunc) Holds(c *Call) bool { return f == nil || f(c) }

// Tainted holds when the call's taint set contains one of servers. With
// no servers, it holds when the set holds any taint at all.
// [Policy.Check] reports servers that are not configured.
func Tainted(servers ...string) Condition { return taintCond(slices.Clone(servers)) }

type taintCond []string

func (servers taintCond) Holds(c *Call) bool {
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

// Principal holds when the call is made for one of ids.
func Principal(ids ...string) Condition { return principalCond(slices.Clone(ids)) }

type principalCond []string

func (ids principalCond) Holds(c *Call) bool { return slices.Contains(ids, c.Principal) }

// Not holds when cond does not.
func Not(cond Condition) Condition { return notCond{cond} }

type notCond struct{ cond Condition }

func (n notCond) Holds(c *Call) bool { return n.cond != nil && !n.cond.Holds(c) }

// taintedServers returns the servers a condition's Tainted names.
func taintedServers(cond Condition) []string {
	switch c := cond.(type) {
	case taintCond:
		return c
	case notCond:
		return taintedServers(c.cond)
	}
	return nil
}

// Rule is one line of a [Policy]. It is a decision for some calls. Their
// server/tool matches one of its patterns, and they meet all its
// conditions.
//
// A pattern is "server/tool", each part a [path.Match] glob. Examples are
// "github/get_*" and "*/read_*". A pattern without "/" names servers:
// "github" is "github/*", and "*" matches every tool. Tool parts match the
// tool's own name on its server, not its exposed name. In them '*'
// matches '/' too.
type Rule struct {
	decision Decision
	patterns []pattern
	written  []string // the patterns as written
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
		r.written = append(r.written, p)
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

// Err reports why r is malformed, or nil. It may have no patterns, or a
// pattern that is not "server/tool" globs. A policy with such a rule
// reports it too.
func (r Rule) Err() error { return r.err }

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
		if cond != nil && !cond.Holds(c) {
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

// slashless hides '/' from path.Match, whose '*' stops at it. Tool names
// may hold '/', and "fs/*" must match them all.
func slashless(s string) string { return strings.ReplaceAll(s, "/", "\x00") }

// Policy is an ordered list of rules. The first rule that matches a call
// decides. A call that no rule matches is denied. A Policy is immutable
// and safe for concurrent use.
type Policy struct {
	rules []Rule
	err   error
}

// NewPolicy returns a policy of rules, in order. A malformed pattern makes
// its rule match nothing. [Policy.Err] reports it. NewClient and NewHub
// refuse such a policy.
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

// AllowAll returns a policy that allows every call. It is an explicit
// choice for a hub whose servers are all trusted.
func AllowAll() *Policy { return NewPolicy(Allow("*")) }

// Err reports malformed rules.
func (p *Policy) Err() error { return p.err }

// Conditional reports whether any rule has conditions ([Rule.When]). Then
// what the policy allows may differ from one caller to another. So may the
// tools listed. It may depend on their principal, their taint, or
// whatever a ConditionFunc reads. A policy without conditions decides by
// names alone. Every caller is offered the same lists.
func (p *Policy) Conditional() bool {
	return slices.ContainsFunc(p.rules, func(r Rule) bool { return len(r.conds) > 0 })
}

// ErrUnknownServer is the cause of each problem [Policy.Check] reports:
// errors.Is(err, ErrUnknownServer).
var ErrUnknownServer = errors.New("names no configured server")

// ownServer is the server id of conduit's own tools. An example is the
// adapters' search_tools (adapters.SearchToolServer). Every policy may
// name it.
const ownServer = "conduit"

// Check reports the names of p that no server of servers can match.
// servers are the configured ids. Such names make their rules match
// nothing:
//
//   - a pattern whose server part is not one of them ("gihtub/*")
//   - a glob that matches none of them ("gh*/read")
//   - a server of a Tainted condition that is not one of them
//
// It returns nil when there are none. Otherwise it returns one error per
// problem, joined by errors.Join. Each has ErrUnknownServer as its cause.
// Its message holds the rule's position and text. Globs such as
// "*/read_*" name no server and are fine. Conduit's own tools (server
// "conduit") are always there. NewHub and NewClient refuse a policy Check
// reports on. Under [Options.LaxPolicy] they log what it reports.
func (p *Policy) Check(servers []string) error {
	if p == nil {
		return nil
	}
	known := append(slices.Clip(servers), ownServer)
	var errs []error
	report := func(i int, r *Rule, what, name string) {
		hint := ""
		if s := closest(name, servers); s != "" && !strings.ContainsAny(name, `*?[\`) {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		errs = append(errs, fmt.Errorf("policy rule %d (%s): %s %w%s", i+1, r.text, what, ErrUnknownServer, hint))
	}
	for i := range p.rules {
		r := &p.rules[i]
		if r.err != nil {
			continue // Err reports it
		}
		for j, pat := range r.patterns {
			if !slices.ContainsFunc(known, func(id string) bool { return globMatch(pat.server, id) }) {
				report(i, r, fmt.Sprintf("pattern %q", r.written[j]), pat.server)
			}
		}
		for _, cond := range r.conds {
			for _, s := range taintedServers(cond) {
				if !slices.Contains(known, s) {
					report(i, r, fmt.Sprintf("tainted %q", s), s)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// closest returns the id of ids that name is most likely a misspelling
// of. It may be the same but for case. Or it may be at most two edits
// away, and a shorter distance than name's length. A swap of neighbours is
// one edit. It returns "" when none is.
func closest(name string, ids []string) string {
	best, bestD := "", 3
	for _, id := range ids {
		if strings.EqualFold(id, name) {
			return id
		}
		if d := editDistance(name, id); d < bestD && d < len(name) {
			best, bestD = id, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b, in
// bytes. It counts insertions, deletions, substitutions and swaps of
// neighbours.
func editDistance(a, b string) int {
	// Three rows of the table: two back, one back, this one.
	pp, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(b)]
}

// Decide returns the decision for c and the rule that made it. ok is false
// when no rule matched. The decision is then deny.
func (p *Policy) Decide(c *Call) (d Decision, rule Rule, ok bool) {
	for i := range p.rules {
		if p.rules[i].matches(c) {
			return p.rules[i].decision, p.rules[i], true
		}
	}
	return DecisionDeny, Rule{}, false
}

// decide is p.Decide for the pipeline. A condition that panics is an
// error, never a decision. Which rules' patterns match a tool of c.Def's
// tool set is worked out once. Only conditions are evaluated per call.
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

// checkPolicy is where a hub's or client's policy meets its servers. What
// Policy.Check reports is an error. Under LaxPolicy it is a warning,
// logged and kept for Warnings.
func (c *core) checkPolicy(servers []Server) error {
	ids := make([]string, 0, len(servers)+len(c.LocalServers))
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	ids = append(ids, c.LocalServers...)
	err := c.Policy.Check(ids)
	if err == nil {
		return nil
	}
	if !c.LaxPolicy {
		return fmt.Errorf("conduit: %w", err)
	}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		c.warnings = append(c.warnings, e.Error())
		c.Logger.Warn("conduit: the policy names a server that is not configured", "problem", e.Error())
	}
	return nil
}
