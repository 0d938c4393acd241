package conduit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestPolicyGlobs(t *testing.T) {
	p := NewPolicy(
		Deny("github/delete_*"),
		Allow("github/get_*", "github/list_*"),
		Ask("github/*"),
		Allow("*/read_?"),
		Allow("fs"),
		Deny("*/dir/*"),
		Allow("web/dir*"),
	)
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		server, tool string
		want         Decision
		rule         string // "" when nothing matched
	}{
		{"github", "delete_repo", DecisionDeny, "deny github/delete_*"},
		{"github", "get_issue", DecisionAllow, "allow github/get_*,github/list_*"},
		{"github", "list_prs", DecisionAllow, "allow github/get_*,github/list_*"},
		{"github", "create_issue", DecisionAsk, "ask github/*"},
		{"other", "read_a", DecisionAllow, "allow */read_?"},
		{"other", "read_ab", DecisionDeny, ""},
		{"fs", "anything", DecisionAllow, "allow fs"},
		{"fs", "with/slash", DecisionAllow, "allow fs"},
		{"web", "dir/list", DecisionDeny, "deny */dir/*"},
		{"web", "dirlist", DecisionAllow, "allow web/dir*"},
		{"nomatch", "x", DecisionDeny, ""},
		{"githubx", "get_issue", DecisionDeny, ""}, // globs are anchored
	}
	for _, tt := range tests {
		d, rule, ok := p.Decide(&Call{Server: tt.server, Tool: tt.tool})
		if d != tt.want || ok != (tt.rule != "") || rule.String() != tt.rule {
			t.Errorf("%s/%s: %v %q %v, want %v %q", tt.server, tt.tool, d, rule, ok, tt.want, tt.rule)
		}
		if ok && rule.decision != d {
			t.Errorf("%s/%s: rule decision %v != %v", tt.server, tt.tool, rule.decision, d)
		}
	}
}

func TestPolicyFirstMatchWins(t *testing.T) {
	c := &Call{Server: "s", Tool: "t"}
	for _, tt := range []struct {
		p    *Policy
		want Decision
	}{
		{NewPolicy(Allow("s/t"), Deny("*")), DecisionAllow},
		{NewPolicy(Deny("*"), Allow("s/t")), DecisionDeny},
		{NewPolicy(Ask("s"), Allow("s/t")), DecisionAsk},
		{NewPolicy(), DecisionDeny},
		{AllowAll(), DecisionAllow},
	} {
		if d, _, _ := tt.p.Decide(c); d != tt.want {
			t.Errorf("%v: got %v, want %v", tt.p.rules, d, tt.want)
		}
	}
}

func TestPolicyConditions(t *testing.T) {
	isWrite := ConditionFunc(func(c *Call) bool { return strings.HasPrefix(c.Tool, "write") })
	p := NewPolicy(
		Deny("*").When(Tainted("web")),
		Ask("fs/write*").When(Tainted()),
		Allow("fs/*").When(Principal("alice", "bob")),
		Allow("admin/*").When(Principal("root"), Not(Tainted())),
		Deny("custom/*").When(isWrite),
		Allow("custom/*"),
	)
	tests := []struct {
		name string
		call Call
		want Decision
	}{
		{"tainted by web denies everything", Call{Server: "fs", Tool: "read", Principal: "alice", Taint: []string{"gh", "web"}}, DecisionDeny},
		{"any taint asks for writes", Call{Server: "fs", Tool: "write", Principal: "alice", Taint: []string{"gh"}}, DecisionAsk},
		{"no taint, known principal", Call{Server: "fs", Tool: "write", Principal: "bob"}, DecisionAllow},
		{"no taint, unknown principal", Call{Server: "fs", Tool: "write", Principal: "eve"}, DecisionDeny},
		{"no principal", Call{Server: "fs", Tool: "read"}, DecisionDeny},
		{"Tainted() ignores an empty taint list", Call{Server: "fs", Tool: "write", Principal: "alice", Taint: []string{}}, DecisionAllow},
		{"all conditions must hold", Call{Server: "admin", Tool: "x", Principal: "root"}, DecisionAllow},
		{"Not", Call{Server: "admin", Tool: "x", Principal: "root", Taint: []string{"gh"}}, DecisionDeny},
		{"custom predicate holds", Call{Server: "custom", Tool: "write_x"}, DecisionDeny},
		{"custom predicate fails, next rule", Call{Server: "custom", Tool: "read_x"}, DecisionAllow},
	}
	for _, tt := range tests {
		if d, _, _ := p.Decide(&tt.call); d != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, d, tt.want)
		}
	}
	// When returns a copy: the unconditioned rule is unchanged.
	base := Allow("x")
	_ = base.When(Principal("a"))
	if d, _, _ := NewPolicy(base).Decide(&Call{Server: "x", Tool: "t"}); d != DecisionAllow {
		t.Error("When changed its receiver")
	}
	// Tainted and Principal copy their arguments.
	servers := []string{"web"}
	cond := Tainted(servers...)
	servers[0] = "other"
	if !cond.Holds(&Call{Taint: []string{"web"}}) {
		t.Error("Tainted kept the caller's slice")
	}
}

func TestPolicyBadPatterns(t *testing.T) {
	for _, r := range []Rule{Allow("a/[x"), Deny("[", "ok"), Ask(), Allow(""), Allow("/tool"), Allow("srv/")} {
		p := NewPolicy(Allow("fine/*"), r)
		if p.Err() == nil {
			t.Errorf("%q: no error", r.String())
			continue
		}
		if d, _, _ := p.Decide(&Call{Server: "fine", Tool: "x"}); d != DecisionAllow {
			t.Errorf("%q: good rules stopped working", r.String())
		}
		// A malformed rule matches nothing.
		if _, rule, ok := p.Decide(&Call{Server: "a", Tool: "[x"}); ok {
			t.Errorf("%q: a malformed rule matched (%v)", r.String(), rule)
		}
	}
	srv := newTestServer(t, "s").echoTools("x")
	bad := NewPolicy(Allow("a/[x"))
	if _, err := NewHub(context.Background(), []Server{srv.server("s")}, &Options{Policy: bad}); err == nil || !strings.Contains(err.Error(), "a/[x") {
		t.Fatalf("NewHub accepted a bad policy: %v", err)
	}
	if _, err := NewClient(context.Background(), srv.server("s"), &Options{Policy: bad}); err == nil {
		t.Fatal("NewClient accepted a bad policy")
	}
	if _, err := NewHub(context.Background(), []Server{srv.server("s")}, &Options{}); err == nil || !strings.Contains(err.Error(), "AllowAll") {
		t.Fatalf("NewHub without a policy: %v", err)
	}
}

func TestDecisionString(t *testing.T) {
	if DecisionAllow.String() != "allow" || DecisionAsk.String() != "ask" || DecisionDeny.String() != "deny" {
		t.Fatal("Decision.String")
	}
	var zero Decision
	if zero != DecisionDeny {
		t.Fatal("the zero Decision must deny")
	}
}

func TestListToolsForLeavesOutDenied(t *testing.T) {
	fs := newTestServer(t, "fs").echoTools("read", "write", "delete")
	web := newTestServer(t, "web").echoTools("fetch")
	h := newHub(t, []Server{fs.server("fs"), web.server("web")}, &Options{Policy: NewPolicy(
		Deny("fs/delete"),
		Deny("fs/write").When(Tainted("web")),
		Allow("fs/*").When(Principal("alice")),
		Ask("fs/*"),
		Allow("web/*"),
	)})
	ctx := context.Background()
	all, err := h.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := exposed(all); !slices.Equal(got, []string{"fs__delete", "fs__read", "fs__write", "web__fetch"}) {
		t.Fatalf("ListTools = %v", got)
	}
	for _, tt := range []struct {
		opts *ListOptions
		want []string
	}{
		{nil, []string{"fs__read", "fs__write", "web__fetch"}}, // ask stays listed
		{&ListOptions{Principal: "alice"}, []string{"fs__read", "fs__write", "web__fetch"}},
		{&ListOptions{Principal: "alice", Taint: []string{"web"}}, []string{"fs__read", "web__fetch"}},
	} {
		ts, err := h.ListToolsFor(ctx, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := exposed(ts); !slices.Equal(got, tt.want) {
			t.Errorf("%+v: %v, want %v", tt.opts, got, tt.want)
		}
		for _, s := range ts.Skipped() {
			if s.Reason != SkipPolicy {
				t.Errorf("skip reason %v", s.Reason)
			}
		}
	}
	// The listing's tools are resolvable for calls, and the left-out ones
	// are not.
	ts, _ := h.ListToolsFor(ctx, &ListOptions{Principal: "alice", Taint: []string{"web"}})
	if _, err := h.CallTool(ctx, "fs__write", nil, &CallOptions{ToolSet: ts, Principal: "alice"}); err == nil {
		t.Fatal("a left-out tool was called")
	} else {
		wantKind(t, err, ErrUnknownTool)
	}
	if fs.totalCalls() != 0 {
		t.Fatal("a call reached the server")
	}
	// A condition that panics leaves the tool listed; the call answers.
	h2 := newHub(t, []Server{fs.server("fs")}, &Options{Policy: NewPolicy(Deny("*").When(ConditionFunc(func(c *Call) bool { panic("boom") })))})
	ts2, err := h2.ListToolsFor(ctx, nil)
	if err != nil || ts2.Len() != 3 {
		t.Fatalf("ListToolsFor with a panicking condition: %v %v", exposed(ts2), err)
	}
	_, err = h2.CallTool(ctx, "fs__read", nil, nil)
	if e := wantKind(t, err, ErrInternal); !strings.Contains(e.Err.Error(), "boom") {
		t.Fatalf("err = %v", e.Err)
	}
}

func TestPolicyCheck(t *testing.T) {
	servers := []string{"github", "web", "mail"}
	p := NewPolicy(
		Allow("github/get_*", "gihtub/list_*"),                    // 1: a typo of a server
		Allow("*/read_*", "*", "conduit/search_tools"),            // fine: globs and conduit's own tools
		Deny("mail/*").When(Tainted("wbe", "web")),                // 3: a typo in a tainted list
		Ask("gh*/x", "w?b", "GitHub"),                             // 4: a glob that matches nothing, a glob that does, a case
		Deny("fs").When(Not(Tainted("files")), Principal("mail")), // 5: a server, and a tainted server, not configured; principals are not servers
		Allow("[").When(Tainted("nope")),                          // malformed: Err's, not Check's
	)
	err := p.Check(servers)
	if !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("Check = %v", err)
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if !errors.Is(e, ErrUnknownServer) {
			t.Errorf("%v: not ErrUnknownServer", e)
		}
		got = append(got, e.Error())
	}
	want := []string{
		`policy rule 1 (allow github/get_*,gihtub/list_*): pattern "gihtub/list_*" names no configured server (did you mean "github"?)`,
		`policy rule 3 (deny mail/* (when ...)): tainted "wbe" names no configured server (did you mean "web"?)`,
		`policy rule 4 (ask gh*/x,w?b,GitHub): pattern "gh*/x" names no configured server`,
		`policy rule 4 (ask gh*/x,w?b,GitHub): pattern "GitHub" names no configured server (did you mean "github"?)`,
		`policy rule 5 (deny fs (when ...)): pattern "fs" names no configured server`,
		`policy rule 5 (deny fs (when ...)): tainted "files" names no configured server`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := NewPolicy(Allow("github/*"), Deny("*").When(Tainted("web"), Tainted())).Check(servers); err != nil {
		t.Errorf("a good policy: %v", err)
	}
	if err := AllowAll().Check(nil); err != nil {
		t.Errorf("AllowAll with no servers: %v", err)
	}
	if err := (*Policy)(nil).Check(servers); err != nil {
		t.Errorf("nil policy: %v", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"web", "web", 0}, {"wbe", "web", 1},
		{"gihtub", "github", 1}, {"githb", "github", 1}, {"gitlab", "github", 2}, {"abc", "xyz", 3},
	} {
		if d := editDistance(tt.a, tt.b); d != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
		if d := editDistance(tt.b, tt.a); d != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, d, tt.d)
		}
	}
}

// TestPolicyMeetsServers: NewHub and NewClient refuse a policy that
// names a server not configured, before anything starts (the zero
// Options, the careless configuration, first); with LaxPolicy they report
// it as warnings, logged and by Warnings.
func TestPolicyMeetsServers(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, "mem").echoTools("a")
	policy := NewPolicy(Deny("gihtub/*"), Allow("*").When(Not(Tainted("wbe"))), Allow("conduit/search_tools"))

	// The default: the misspelt deny rule would deny nothing, so no hub.
	_, err := NewHub(context.Background(), []Server{srv.server("github")}, &Options{Policy: policy})
	if !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), `pattern "gihtub/*" names no configured server (did you mean "github"?)`) {
		t.Errorf("default hub: %v", err)
	}
	_, err = NewClient(context.Background(), srv.server("notes"), &Options{Policy: NewPolicy(Allow("note"))})
	if !errors.Is(err, ErrUnknownServer) {
		t.Errorf("default client: %v", err)
	}
	// Globs that name no server and conduit's own tools are fine.
	if h := newHub(t, []Server{srv.server("web")}, &Options{Policy: NewPolicy(Deny("*/del*"), Allow("conduit/search_tools"), Allow("*"))}); len(h.Warnings()) != 0 {
		t.Errorf("globs warn: %q", h.Warnings())
	}
	if h := newHub(t, []Server{srv.server("web")}, &Options{Policy: AllowAll()}); len(h.Warnings()) != 0 {
		t.Errorf("AllowAll warns: %q", h.Warnings())
	}
	// The program's own tools' servers are named in LocalServers.
	local := NewPolicy(Allow("local/time", "web/*"))
	if _, err := NewHub(context.Background(), []Server{srv.server("web")}, &Options{Policy: local}); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("local server not listed: %v", err)
	}
	if h := newHub(t, []Server{srv.server("web")}, &Options{Policy: local, LocalServers: []string{"local"}}); len(h.Warnings()) != 0 {
		t.Errorf("LocalServers warns: %q", h.Warnings())
	}

	// The named opt-out.
	var mu sync.Mutex
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	h := newHub(t, []Server{srv.server("github"), srv.server("web")}, &Options{Policy: policy, Logger: logger, LaxPolicy: true})
	want := []string{
		`policy rule 1 (deny gihtub/*): pattern "gihtub/*" names no configured server (did you mean "github"?)`,
		`policy rule 2 (allow * (when ...)): tainted "wbe" names no configured server (did you mean "web"?)`,
	}
	if got := h.Warnings(); !slices.Equal(got, want) {
		t.Errorf("Warnings = %q", got)
	}
	mu.Lock()
	log := buf.String()
	mu.Unlock()
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, `names no configured server (did you mean \"github\"?)`) {
		t.Errorf("log:\n%s", log)
	}
	// The hub works as configured all the same.
	if _, err := h.CallTool(context.Background(), "github__a", map[string]any{}, nil); err != nil {
		t.Errorf("call: %v", err)
	}
	// A client's policy names its one server.
	cl := newClient(t, srv.server("notes"), &Options{Policy: NewPolicy(Allow("notes/*", "note/x")), LaxPolicy: true})
	if got := cl.Warnings(); len(got) != 1 || !strings.Contains(got[0], `pattern "note/x" names no configured server (did you mean "notes"?)`) {
		t.Errorf("client Warnings = %q", got)
	}
}

func TestPolicyConditional(t *testing.T) {
	for _, tc := range []struct {
		p    *Policy
		want bool
	}{
		{AllowAll(), false},
		{NewPolicy(Deny("web/*"), Ask("fs/write"), Allow("*")), false},
		{NewPolicy(Deny("fs/*").When(Tainted("web")), Allow("*")), true},
		{NewPolicy(Allow("*").When(Principal("alice"))), true},
		{NewPolicy(Allow("*").When(ConditionFunc(func(*Call) bool { return true }))), true},
	} {
		if got := tc.p.Conditional(); got != tc.want {
			t.Errorf("%v: Conditional() = %v, want %v", tc.p.rules, got, tc.want)
		}
	}
}
