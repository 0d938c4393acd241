package conduit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The property: whatever the policy and the approver, a call reaches its
// server exactly when an independent reference reading of the policy says
// it is allowed, and is answered with the matching kind otherwise.

// refRule is the reference's own representation of a rule.
type refRule struct {
	decision   Decision
	patterns   []string
	tainted    []string // nil: no condition; empty: any taint
	hasTainted bool
	principals []string // nil: no condition
	notTainted bool     // Not(Tainted())
	needsArgs  bool     // the custom predicate
}

// refGlob matches '*' (any run, '/' included) and '?' (one byte).
func refGlob(p, s string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if refGlob(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && refGlob(p[1:], s[1:])
	}
	return s != "" && s[0] == p[0] && refGlob(p[1:], s[1:])
}

func (r refRule) applies(server, tool, principal string, taint []string, args map[string]any) bool {
	hit := false
	for _, p := range r.patterns {
		sp, tp, ok := strings.Cut(p, "/")
		if !ok {
			tp = "*"
		}
		if refGlob(sp, server) && refGlob(tp, tool) {
			hit = true
		}
	}
	if !hit {
		return false
	}
	if r.hasTainted {
		if len(r.tainted) == 0 {
			if len(taint) == 0 {
				return false
			}
		} else if !slices.ContainsFunc(taint, func(s string) bool { return slices.Contains(r.tainted, s) }) {
			return false
		}
	}
	if r.principals != nil && !slices.Contains(r.principals, principal) {
		return false
	}
	if r.notTainted && len(taint) > 0 {
		return false
	}
	if r.needsArgs && len(args) == 0 {
		return false
	}
	return true
}

func (r refRule) rule() Rule {
	var rule Rule
	switch r.decision {
	case DecisionAllow:
		rule = Allow(r.patterns...)
	case DecisionAsk:
		rule = Ask(r.patterns...)
	default:
		rule = Deny(r.patterns...)
	}
	var conds []Condition
	if r.hasTainted {
		conds = append(conds, Tainted(r.tainted...))
	}
	if r.principals != nil {
		conds = append(conds, Principal(r.principals...))
	}
	if r.notTainted {
		conds = append(conds, Not(Tainted()))
	}
	if r.needsArgs {
		conds = append(conds, ConditionFunc(func(c *Call) bool { return len(c.Args) > 0 }))
	}
	if len(conds) > 0 {
		rule = rule.When(conds...)
	}
	return rule
}

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func subset[T any](rng *rand.Rand, xs []T) []T {
	out := []T{}
	for _, x := range xs {
		if rng.IntN(2) == 0 {
			out = append(out, x)
		}
	}
	return out
}

func TestPolicyProperty(t *testing.T) {
	t.Parallel()
	catalog := map[string][]string{
		"alpha": {"read", "write", "list_x"},
		"beta":  {"fetch", "post"},
		"gamma": {"read", "exec"},
	}
	ids := []string{"alpha", "beta", "gamma"}
	servers := map[string]*testServer{}
	for _, id := range ids {
		servers[id] = newTestServer(t, id).echoTools(catalog[id]...)
	}
	var names []string
	for _, id := range ids {
		for _, tool := range catalog[id] {
			names = append(names, id+"__"+tool)
		}
	}
	unknown := []string{"alpha__nope", "delta__read", "read", "alpha_read", "", "beta__fetch__x"}
	serverGlobs := []string{"*", "alpha", "beta", "gamma", "a*", "?eta", "g*a", "nope", "*a"}
	toolGlobs := []string{"*", "read", "re*", "*x*", "?ost", "exec", "w*", "*_*", "fetch"}
	principals := []string{"", "alice", "bob", "eve"}
	ctx := context.Background()
	var lists []ServerTools
	for _, id := range ids {
		lists = append(lists, ServerTools{Server: id, Tools: tools(catalog[id]...)})
	}
	ts := NewToolSet(&ToolSetOptions{Namespace: true}, lists...)

	const iterations = 300
	sent, refused := 0, 0
	for it := range iterations {
		rng := rand.New(rand.NewPCG(uint64(it), 0x5eed))
		var refs []refRule
		for range 1 + rng.IntN(5) {
			r := refRule{decision: pick(rng, []Decision{DecisionAllow, DecisionAsk, DecisionDeny})}
			for range 1 + rng.IntN(2) {
				p := pick(rng, serverGlobs)
				if rng.IntN(4) != 0 {
					p += "/" + pick(rng, toolGlobs)
				}
				r.patterns = append(r.patterns, p)
			}
			if rng.IntN(3) == 0 {
				r.hasTainted, r.tainted = true, subset(rng, ids)
			}
			if rng.IntN(3) == 0 {
				r.principals = subset(rng, principals[1:])
				if len(r.principals) == 0 {
					r.principals = []string{"alice"}
				}
			}
			r.notTainted = rng.IntN(6) == 0
			r.needsArgs = rng.IntN(6) == 0
			refs = append(refs, r)
		}
		rules := make([]Rule, len(refs))
		for i, r := range refs {
			rules[i] = r.rule()
		}
		// The approver's answer depends on the tool and principal only, so
		// the reference can compute it.
		answers := map[string]int{}
		for _, n := range names {
			for _, p := range principals {
				answers[n+"|"+p] = rng.IntN(3) // 0 allow, 1 deny, 2 deny and halt
			}
		}
		var approver Approver
		if rng.IntN(10) < 7 {
			approver = func(_ context.Context, req ApprovalRequest) Approval {
				switch answers[req.Call.Exposed+"|"+req.Call.Principal] {
				case 0:
					return Approve()
				case 1:
					return Reject("no")
				}
				return RejectAndHalt("stop")
			}
		}
		var hubServers []Server
		for _, id := range ids {
			hubServers = append(hubServers, servers[id].server(id))
		}
		// The rules name servers the hub may not have ("nope"): lax, so
		// that those rules match nothing rather than refuse the hub.
		h, err := NewHub(ctx, hubServers, &Options{Policy: NewPolicy(rules...), Approver: approver, LaxPolicy: true})
		if err != nil {
			t.Fatal(err)
		}
		if it == 0 {
			// The hub's own listing, once; the other iterations resolve
			// against an equal tool set built without asking the servers.
			listed, err := h.ListTools(ctx)
			if err != nil || !slices.Equal(exposed(listed), exposed(ts)) {
				t.Fatalf("listing %v, want %v (%v)", exposed(listed), exposed(ts), err)
			}
		}
		for range 3 + rng.IntN(6) {
			name := pick(rng, names)
			if rng.IntN(5) == 0 {
				name = pick(rng, unknown)
			}
			principal := pick(rng, principals)
			taint := subset(rng, ids)
			var args map[string]any
			if rng.IntN(2) == 0 {
				args = map[string]any{"k": 1}
			}

			// The reference.
			server, tool, known := strings.Cut(name, "__")
			known = known && slices.Contains(catalog[server], tool)
			want := DecisionDeny
			matched := false
			for _, r := range refs {
				if known && r.applies(server, tool, principal, taint, args) {
					want, matched = r.decision, true
					break
				}
			}
			wantKind, allowed := ErrDenied, false
			switch {
			case !known:
				wantKind = ErrUnknownTool
			case want == DecisionAllow:
				allowed = true
			case want == DecisionAsk && approver == nil:
				wantKind = ErrApprovalRequired
			case want == DecisionAsk:
				allowed = answers[name+"|"+principal] == 0
			}
			_ = matched

			before := 0
			if known {
				before = servers[server].called(tool)
			}
			_, err := h.CallTool(ctx, name, args, &CallOptions{ToolSet: ts, Principal: principal, Taint: taint})
			after := before
			if known {
				after = servers[server].called(tool)
			}
			desc := fmt.Sprintf("iteration %d: %s principal=%q taint=%v args=%v rules=%+v", it, name, principal, taint, args, refs)
			if allowed {
				sent++
				if err != nil || after != before+1 {
					t.Fatalf("%s: allowed, but err=%v calls %d->%d", desc, err, before, after)
				}
				continue
			}
			refused++
			if after != before {
				t.Fatalf("%s: refused (%v), but the server got it", desc, wantKind)
			}
			if !errors.Is(err, wantKind) {
				t.Fatalf("%s: err = %v, want kind %v", desc, err, wantKind)
			}
		}
		h.Close()
	}
	// The seeds must exercise both sides.
	if sent < 100 || refused < 100 {
		t.Fatalf("weak run: %d sent, %d refused", sent, refused)
	}
	t.Logf("%d calls sent, %d refused", sent, refused)
}
