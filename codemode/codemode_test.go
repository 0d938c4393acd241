// Tests of runs: answers, governance of nested calls, limits, hostile code.
package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/codemode"
)

func execute(t *testing.T, hub *conduit.Hub, code string, r *codemode.Run) (*codemode.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r == nil {
		r = &codemode.Run{}
	}
	r.Source = hub
	if r.ToolSet == nil {
		ts, err := hub.ListToolsFor(ctx, &conduit.ListOptions{Principal: r.Call.Principal, Taint: r.Call.Taint})
		if err != nil {
			t.Fatal(err)
		}
		r.ToolSet = ts
	}
	return codemode.Execute(ctx, code, r)
}

// A careless configuration: code mode over a hub with its default
// (strict, deny-by-default) policy calls nothing the policy does not allow.
func TestDefaultPolicyRefusesNestedCalls(t *testing.T) {
	hub, c := newCorpusHub(t, 3, &conduit.Options{Policy: conduit.NewPolicy()})
	res, err := execute(t, hub, `try { await corpus.read_doc({id: 1}); return "sent" } catch (e) { return "refused: " + e.message }`, nil)
	if err == nil && string(res.Value) == `"sent"` {
		t.Fatal("a call was sent under the default policy")
	}
	if c.sent("read_doc") != 0 {
		t.Fatalf("read_doc was sent %d times", c.sent("read_doc"))
	}
}

func TestCountZebras(t *testing.T) {
	hub, c := newCorpusHub(t, 200, &conduit.Options{Policy: conduit.AllowAll()})
	res, err := execute(t, hub, `
const {ids} = await corpus.list_docs({});
let n = 0;
for (const id of ids) {
  const text: string = await corpus.read_doc({id});
  if (text.includes("zebra")) n++;
}
console.log("read", ids.length);
return {zebras: n};`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `{"zebras":29}` {
		t.Fatalf("value %s", res.Value)
	}
	if len(res.Logs) != 1 || res.Logs[0] != "read 200" {
		t.Fatalf("logs %q", res.Logs)
	}
	if c.sent("read_doc") != 200 || len(res.Calls) != 201 {
		t.Fatalf("%d reads sent, %d calls recorded", c.sent("read_doc"), len(res.Calls))
	}
}

func TestDeniedCallNeverSent(t *testing.T) {
	hub, c := newCorpusHub(t, 3, &conduit.Options{Policy: conduit.NewPolicy(conduit.Deny("corpus/delete_doc"), conduit.Allow("*"))})
	// Not declared: a denied tool is no method of the server's object.
	res, err := execute(t, hub, `return typeof corpus.delete_doc`, nil)
	if err != nil || string(res.Value) != `"undefined"` {
		t.Fatalf("delete_doc is offered: %s %v", res.Value, err)
	}
	// Offered by a tool set that lists it, the pipeline still refuses it.
	all, err := hub.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err = execute(t, hub, `try { await corpus.delete_doc({id: 1}); return "sent" } catch (e) { return e.message }`, &codemode.Run{ToolSet: all})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Value), "denied") {
		t.Fatalf("the refusal says %s", res.Value)
	}
	if c.sent("delete_doc") != 0 {
		t.Fatal("a denied call was sent")
	}
}

func TestTaintFromNestedCallReachesLaterDecisions(t *testing.T) {
	hub, c := newCorpusHub(t, 3, &conduit.Options{Policy: conduit.NewPolicy(
		conduit.Deny("corpus/write_note").When(conduit.Tainted("web")),
		conduit.Allow("*"))})
	res, err := execute(t, hub, `
await corpus.write_note({text: "before"});
await web.fetch({});
try { await corpus.write_note({text: "after"}); } catch (e) { return e.message }
return "written"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) == `"written"` || c.sent("write_note") != 1 {
		t.Fatalf("the write after reading web was let through: %s, %d writes", res.Value, c.sent("write_note"))
	}
	if !slices.Contains(res.Taint, "web") {
		t.Fatalf("taint %v", res.Taint)
	}
}

func TestCodeErrorsCarryTheLine(t *testing.T) {
	hub, _ := newCorpusHub(t, 1, &conduit.Options{Policy: conduit.AllowAll()})
	for _, tc := range []struct{ code, want string }{
		{"const a = 1;\nthrow new Error('boom')", "line 2"},
		{"const a = 1;\n\nlet x = ;", "line 3"},
		{"const a: number = 1;\nconst b = a +;", "line 2"},
		{"let n: number = 1;\nundefinedName.x", "line 2"},
	} {
		_, err := execute(t, hub, tc.code, nil)
		var ce *codemode.CodeError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s", tc.code, err, tc.want)
		}
	}
}

func TestTypeScriptRuns(t *testing.T) {
	hub, _ := newCorpusHub(t, 1, &conduit.Options{Policy: conduit.AllowAll()})
	res, err := execute(t, hub, "interface R { n: number }\nconst r: R = {n: 2};\nreturn r.n as number * 21;", nil)
	if err != nil || string(res.Value) != "42" {
		t.Fatalf("%s %v", res.Value, err)
	}
}

func TestLimits(t *testing.T) {
	hub, c := newCorpusHub(t, 5, &conduit.Options{Policy: conduit.AllowAll()})
	for _, tc := range []struct {
		name   string
		code   string
		limits codemode.Limits
		want   codemode.Limit
	}{
		{"wall time", "for (;;) {}", codemode.Limits{WallTime: 300 * time.Millisecond}, codemode.LimitWallTime},
		{"memory", `const a = []; for (;;) a.push("x".repeat(1 << 20));`, codemode.Limits{Memory: 16 << 20}, codemode.LimitMemory},
		{"calls", `for (let i = 0; i < 10; i++) await corpus.read_doc({id: 1});`, codemode.Limits{MaxCalls: 3}, codemode.LimitCalls},
		{"output", `for (;;) console.log("x".repeat(1000));`, codemode.Limits{MaxOutputBytes: 10000}, codemode.LimitOutput},
		{"returned output", `return "x".repeat(20000);`, codemode.Limits{MaxOutputBytes: 10000}, codemode.LimitOutput},
		{"code", "return 1;" + strings.Repeat(" ", 2000), codemode.Limits{MaxCodeBytes: 1000}, codemode.LimitCode},
		{"recursion", "function f(n) { return f(n + 1) + 1 }\nreturn f(0)", codemode.Limits{}, codemode.LimitStack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execute(t, hub, tc.code, &codemode.Run{Options: &codemode.Options{Limits: tc.limits}})
			var le *codemode.LimitError
			if !errors.As(err, &le) || le.Limit != tc.want || !strings.Contains(err.Error(), string(tc.want)) {
				t.Fatalf("error %v, want the %s limit", err, tc.want)
			}
		})
	}
	if n := c.sent("read_doc"); n != 3 {
		t.Errorf("%d calls sent past a limit of 3", n)
	}
	// The process and the next run go on.
	res, err := execute(t, hub, "return 1 + 1", nil)
	if err != nil || string(res.Value) != "2" {
		t.Fatalf("after the limits: %s %v", res.Value, err)
	}
}

func TestHostileCode(t *testing.T) {
	hub, c := newCorpusHub(t, 3, &conduit.Options{Policy: conduit.NewPolicy(conduit.Deny("corpus/delete_doc"), conduit.Allow("*"))})
	for _, tc := range []struct {
		name, code string
		check      func(*codemode.Result, error) string
	}{
		{"prototype pollution", `
Object.prototype.delete_doc = () => "polluted";
try { corpus.read_doc = () => "replaced" } catch (e) {}
Function.prototype.call = () => { throw new Error("hijacked") };
Promise.prototype.then = function() { throw new Error("hijacked then") };
const r = await corpus.read_doc({id: 1});
return [typeof r, Object.isFrozen(corpus), Object.getPrototypeOf(corpus) === null]`,
			func(r *codemode.Result, err error) string {
				if err != nil {
					return err.Error()
				}
				if string(r.Value) != `["string",true,true]` {
					return string(r.Value)
				}
				return ""
			}},
		{"toString calling a tool", `
const evil = { toJSON() { corpus.delete_doc && corpus.delete_doc({id: 2}); return {id: 1} }, toString() { corpus.write_note({text: "x"}); return "1" } };
const r = await corpus.read_doc(evil);
return String(r).length > 0`,
			func(r *codemode.Result, err error) string {
				if err != nil {
					return err.Error()
				}
				return ""
			}},
		{"never settles", `await new Promise(() => {}); return 1`,
			func(r *codemode.Result, err error) string {
				if !errors.Is(err, codemode.ErrNeverSettled) {
					return "error " + errString(err)
				}
				return ""
			}},
		{"no clock, no randomness source but conduit's", `
let clock = "none"; try { Date.now(); clock = "now" } catch (e) {}
try { new Date(); clock = "new Date" } catch (e) {}
const fixed = new Date(0).toISOString();
return [clock, fixed, typeof setTimeout, typeof require, typeof process, typeof fetch, Math.random() === Math.random()]`,
			func(r *codemode.Result, err error) string {
				if err != nil {
					return err.Error()
				}
				if string(r.Value) != `["none","1970-01-01T00:00:00.000Z","undefined","undefined","undefined","undefined",false]` {
					return string(r.Value)
				}
				return ""
			}},
		{"host functions are gone", `return [typeof __conduit_call, typeof __conduit_log]`,
			func(r *codemode.Result, err error) string {
				if err != nil || string(r.Value) != `["undefined","undefined"]` {
					return string(r.Value) + errString(err)
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := execute(t, hub, tc.code, &codemode.Run{Options: &codemode.Options{Limits: codemode.Limits{WallTime: 5 * time.Second}}})
			if msg := tc.check(res, err); msg != "" {
				t.Fatal(msg)
			}
		})
	}
	if c.sent("delete_doc") != 0 {
		t.Fatal("a denied call was sent")
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestReplay(t *testing.T) {
	hub, c := newCorpusHub(t, 3, &conduit.Options{Policy: conduit.AllowAll()})
	code := `const a = await corpus.read_doc({id: 1}); await corpus.write_note({text: "n"}); return a.length`
	first, err := execute(t, hub, code, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := execute(t, hub, code, &codemode.Run{Replay: first.Calls})
	if err != nil || string(again.Value) != string(first.Value) {
		t.Fatalf("replay: %s %v", again.Value, err)
	}
	if c.sent("read_doc") != 1 || c.sent("write_note") != 1 {
		t.Fatalf("the replay sent again: %v", c.calls)
	}
	_, err = execute(t, hub, `await corpus.read_doc({id: 2}); return 1`, &codemode.Run{Replay: first.Calls})
	if !errors.Is(err, codemode.ErrDivergent) {
		t.Fatalf("divergent replay: %v", err)
	}
	if c.sent("read_doc") != 1 {
		t.Fatal("a divergent replay sent a call")
	}
	b, _ := json.Marshal(first.Calls)
	if !strings.Contains(string(b), `"exposed":"corpus__read_doc"`) {
		t.Fatalf("records %s", b)
	}
}

type parentKey struct{}

// Nested calls are traced as calls of their own, each in the context of
// the run_code call that made them: a span a Trace starts for run_code
// is the parent of the nested calls' (as otelconduit's are).
func TestNestedCallsTracedUnderRunCode(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	trace := &conduit.Trace{CallStart: func(i conduit.CallStartInfo) context.Context {
		parent, _ := i.Context.Value(parentKey{}).(string)
		mu.Lock()
		seen = append(seen, parent+">"+i.Call.Exposed)
		mu.Unlock()
		return context.WithValue(i.Context, parentKey{}, i.Call.Exposed)
	}}
	hub, _ := newCorpusHub(t, 3, &conduit.Options{Policy: conduit.AllowAll(), Trace: trace})
	ts, err := hub.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lt := codemode.LocalTool(hub, ts, nil)
	res, err := hub.CallLocal(context.Background(), lt, map[string]any{"code": `await corpus.read_doc({id: 1}); await corpus.list_docs({}); return 1`}, &conduit.CallOptions{ID: "c1"})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	want := []string{">run_code", "run_code>corpus__read_doc", "run_code>corpus__list_docs"}
	if !slices.Equal(seen, want) {
		t.Fatalf("traced %v, want %v", seen, want)
	}
}

// Past the search threshold run_code declares conduit.search_tools, which
// returns the declarations of what it finds; every tool stays callable.
func TestSearchPastTheThreshold(t *testing.T) {
	hub, c := newCorpusHub(t, 3, &conduit.Options{Policy: conduit.AllowAll()})
	ts, err := hub.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o := &codemode.Options{SearchThreshold: 2}
	def := codemode.Definition(ts, o)
	if !strings.Contains(def.Description, "search_tools(args:") || strings.Contains(def.Description, "read_doc(args:") {
		t.Fatalf("description:\n%s", def.Description)
	}
	if d := codemode.Definition(ts, nil); !strings.Contains(d.Description, "read_doc(args:") {
		t.Fatalf("under the default threshold every tool is declared:\n%s", d.Description)
	}
	res, err := execute(t, hub, `const d: string = await conduit.search_tools({query: "read a document"});
const text = await corpus.read_doc({id: 1});
return [d.includes("read_doc(args: { id: number; })"), text.length > 0]`, &codemode.Run{ToolSet: ts, Options: o})
	if err != nil || string(res.Value) != "[true,true]" {
		t.Fatalf("%s %v", res.Value, err)
	}
	if c.sent("read_doc") != 1 {
		t.Fatal("the found tool was not called")
	}
}
