// The sandbox: one QuickJS VM per run, bounded, with tools as its only door.
package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evanw/esbuild/pkg/api"
	"modernc.org/quickjs"
)

// Limits bound one run of code. A field that is zero (or negative) is
// its default: no run is unbounded.
type Limits struct {
	// WallTime bounds the run, nested calls included (default 30s).
	WallTime time.Duration
	// Memory bounds the engine's heap, in bytes (default 64 MiB).
	Memory int
	// MaxCalls bounds the tool calls of one run (default 1000).
	MaxCalls int
	// MaxParallel bounds the calls of one run in flight at once (default
	// 32). Code that starts more (Promise.all over a long list) has the
	// rest wait their turn: a server is not flooded.
	MaxParallel int
	// MaxOutputBytes bounds what the run returns and logs together, in
	// bytes (default 64 KiB).
	MaxOutputBytes int
	// MaxCodeBytes bounds the code's size, in bytes (default 64 KiB).
	MaxCodeBytes int
}

// Defaults of Limits.
const (
	DefaultWallTime       = 30 * time.Second
	DefaultMemory         = 64 << 20
	DefaultMaxCalls       = 1000
	DefaultMaxParallel    = 32
	DefaultMaxOutputBytes = 64 << 10
	DefaultMaxCodeBytes   = 64 << 10
)

func (l Limits) withDefaults() Limits {
	if l.WallTime <= 0 {
		l.WallTime = DefaultWallTime
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.MaxCalls <= 0 {
		l.MaxCalls = DefaultMaxCalls
	}
	if l.MaxParallel <= 0 {
		l.MaxParallel = DefaultMaxParallel
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if l.MaxCodeBytes <= 0 {
		l.MaxCodeBytes = DefaultMaxCodeBytes
	}
	return l
}

// Limit names a bound of Limits, as an over-limit error says it.
type Limit string

// The limits a run can reach.
const (
	LimitWallTime Limit = "wall time"
	LimitMemory   Limit = "memory"
	LimitCalls    Limit = "calls per run"
	LimitOutput   Limit = "output size"
	LimitCode     Limit = "code size"
	LimitStack    Limit = "stack depth"
)

// LimitError reports a run stopped by one of its limits.
type LimitError struct {
	Limit Limit
	// Value is the limit's value, as the error shows it.
	Value string
}

// Error names the limit and its value.
func (e *LimitError) Error() string {
	return fmt.Sprintf("code mode %s limit (%s) exceeded", e.Limit, e.Value)
}

// CodeError reports code that failed: a syntax error or a throw the code
// did not catch. Line is 1-based in the code as given. It is 0 when unknown.
type CodeError struct {
	Name    string
	Message string
	Line    int
}

// Error says what failed and where, for the model to fix its code.
func (e *CodeError) Error() string {
	s := e.Message
	if e.Name != "" {
		s = e.Name + ": " + s
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d)", e.Line)
	}
	return s
}

// ErrNeverSettled is a run whose promise cannot settle: nothing is
// pending that could settle it.
var ErrNeverSettled = errors.New("code mode: the code's promise never settles (nothing it awaits can complete)")

// hostCall is one call the code made, waiting to be answered.
type hostCall struct {
	id     int
	global string
	method string
	args   string // JSON
}

// outcome answers a hostCall: a JSON value, or an error message.
// reached names the server whose output it carries, if any.
type outcome struct {
	value   string
	err     string
	reached string
}

// engine runs one piece of code in a fresh VM.
type engine struct {
	vm      *quickjs.VM
	limits  Limits
	queue   []hostCall
	fatal   error
	calls   int
	logs    []string
	logSize int
	// lines map the lines of stripped TypeScript to the code's.
	lines []int
	// done, result and failure are the code's promise's outcome.
	done    bool
	result  string
	failure error
}

// boot is the prelude. It captures what the code could replace. It
// builds the frozen tool objects and console. It returns the settle
// function. The host functions leave the global object before any code runs.
const boot = `(function(tools){
  const host = globalThis.__conduit_call, hostLog = globalThis.__conduit_log, hostDone = globalThis.__conduit_done;
  delete globalThis.__conduit_call; delete globalThis.__conduit_log; delete globalThis.__conduit_done;
  const apply = Reflect.apply, then = Promise.prototype.then;
  const P = Promise, E = Error, parse = JSON.parse, stringify = JSON.stringify, freeze = Object.freeze, create = Object.create, String_ = String;
  const pending = new Map(); let next = 0;
  const mk = (g, m) => freeze(function(args) {
    let a;
    try { a = stringify(args === undefined ? {} : args); } catch (e) { return P.reject(new E("the arguments of " + g + "." + m + " are not JSON: " + e)); }
    return new P((resolve, reject) => { const id = ++next; pending.set(id, {resolve, reject}); host(id, g, m, a === undefined ? "{}" : a); });
  });
  for (const g in tools) {
    const o = create(null);
    for (const m of tools[g]) o[m] = mk(g, m);
    Object.defineProperty(globalThis, g, {value: freeze(o), writable: false, configurable: false, enumerable: false});
  }
  const fmt = (v) => { if (typeof v === "string") return v; try { const s = stringify(v); return s === undefined ? String_(v) : s; } catch (e) { return String_(v); } };
  const con = create(null);
  con.log = freeze(function(...a) { hostLog(a.map(fmt).join(" ")); });
  con.error = con.log; con.warn = con.log; con.info = con.log;
  Object.defineProperty(globalThis, "console", {value: freeze(con), writable: false, configurable: false});
  // No clock and no randomness: a replayed run must make the same calls.
  const noClock = () => { throw new E("code mode has no clock"); };
  const D = Date;
  const SafeDate = new Proxy(D, {
    apply() { noClock(); },
    construct(t, a, nt) { if (a.length === 0) noClock(); return Reflect.construct(t, a, nt); },
  });
  Object.defineProperty(SafeDate, "now", {value: noClock});
  globalThis.Date = SafeDate;
  let seed = 0x2545F491;
  Math.random = function() { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 4294967296; };
  // settle answers call id; id 0 watches the code's own promise v.
  return function settle(id, ok, v) {
    if (id === 0) {
      apply(then, v, [
        (r) => { let j; try { j = stringify(r); } catch (e) { hostDone(false, "TypeError", "the returned value is not JSON: " + e, ""); return; } hostDone(true, j === undefined ? "null" : j, "", ""); },
        (e) => { let name = "", msg = "", stack = ""; try { name = String_(e && e.name || ""); msg = String_(e && e.message !== undefined ? e.message : e); stack = String_(e && e.stack || ""); } catch (x) {} hostDone(false, name, msg, stack); },
      ]);
      return;
    }
    const p = pending.get(id); pending.delete(id);
    if (!p) return;
    if (ok) p.resolve(parse(v)); else p.reject(new E(v));
  };
})`

// lineOf finds the first "<eval>:LINE" frame in a stack.
var lineOf = regexp.MustCompile(`<eval>:(\d+)`)

// wrap makes the code the body of an async function. The wrapper starts
// on the code's own first line, so line numbers stay the code's.
func wrap(code string) string { return "(async function() {" + code + "\n})()" }

// stripTypes turns TypeScript into JavaScript. It returns the line of the
// code each line of the JavaScript came from. Its errors carry the line.
func stripTypes(code string) (string, []int, error) {
	r := api.Transform(wrap(code), api.TransformOptions{Loader: api.LoaderTS, Target: api.ES2022, Sourcemap: api.SourceMapExternal})
	if len(r.Errors) > 0 {
		m := r.Errors[0]
		ce := &CodeError{Name: "SyntaxError", Message: m.Text}
		if m.Location != nil {
			ce.Line = m.Location.Line
		}
		return "", nil, ce
	}
	return string(r.Code), sourceLines(r.Map), nil
}

// sourceLines reads a source map's mappings. For each generated line
// (from 0), it gives the original line (from 1) of its first segment. It
// gives 0 if none.
func sourceLines(sourceMap []byte) []int {
	var m struct {
		Mappings string `json:"mappings"`
	}
	if json.Unmarshal(sourceMap, &m) != nil {
		return nil
	}
	var out []int
	orig := 0 // the original line, from 0, carried across segments
	for _, line := range strings.Split(m.Mappings, ";") {
		first := 0
		for i, seg := range strings.Split(line, ",") {
			f := vlq(seg)
			if len(f) >= 3 {
				orig += f[2]
				if i == 0 || first == 0 {
					first = orig + 1
				}
			}
		}
		out = append(out, first)
	}
	return out
}

// vlq decodes one base64 VLQ segment of a source map.
func vlq(seg string) []int {
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var out []int
	v, shift := 0, 0
	for i := 0; i < len(seg); i++ {
		d := strings.IndexByte(b64, seg[i])
		if d < 0 {
			return nil
		}
		v += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		if v&1 != 0 {
			out = append(out, -(v >> 1))
		} else {
			out = append(out, v>>1)
		}
		v, shift = 0, 0
	}
	return out
}

// codeError turns the engine's error into what the model reads. It names
// the limit when one was reached.
func (e *engine) codeError(err error) error {
	if e.fatal != nil {
		return e.fatal
	}
	var qe *quickjs.Error
	if !errors.As(err, &qe) {
		return &CodeError{Message: err.Error()}
	}
	switch {
	case qe.Name == "InternalError" && strings.Contains(qe.Message, "interrupted"):
		return &LimitError{Limit: LimitWallTime, Value: e.limits.WallTime.String()}
	case qe.Name == "InternalError" && strings.Contains(qe.Message, "out of memory"):
		return &LimitError{Limit: LimitMemory, Value: strconv.Itoa(e.limits.Memory) + " bytes"}
	case qe.Name == "InternalError" && strings.Contains(qe.Message, "stack overflow"):
		return &LimitError{Limit: LimitStack, Value: "engine default"}
	}
	ce := &CodeError{Name: qe.Name, Message: qe.Message, Line: qe.LineNumber}
	if ce.Line == 0 {
		if m := lineOf.FindStringSubmatch(qe.Stack); m != nil {
			ce.Line, _ = strconv.Atoi(m[1])
		}
	}
	if e.lines != nil && ce.Line > 0 {
		if ce.Line <= len(e.lines) {
			ce.Line = e.lines[ce.Line-1]
		} else {
			ce.Line = 0
		}
	}
	return ce
}

// A starter starts one call the code made. It runs on the engine's
// goroutine, in the order the code made the calls. It returns the
// call's outcome, when it is answered at once, or send. send makes the
// call, concurrently with the run's other calls, and returns its outcome.
type starter func(global, method string, args json.RawMessage) (now outcome, send func(context.Context) outcome)

// flight is a call started and not yet delivered to the code.
type flight struct {
	id   int
	done chan struct{}
	out  outcome
}

// run runs code with tools (global -> methods). start starts each call
// it makes. delivered is told of each outcome as it reaches the code, on
// this goroutine. It returns the JSON of what the code returned and its
// logs.
//
// The calls run concurrently. Their outcomes reach the code in the order
// the code made the calls, whatever order they end in. So what the code
// does next, and which calls it makes, never depends on timing. A replay
// then makes the same calls in the same order. halt, when it returns an
// error, stops the run: no call is started after it. run returns only
// when every call it started has ended.
func run(ctx context.Context, code string, tools map[string][]string, l Limits, start starter, halt func() error, delivered func(outcome)) (string, []string, error) {
	l = l.withDefaults()
	if len(code) > l.MaxCodeBytes {
		return "", nil, &LimitError{Limit: LimitCode, Value: strconv.Itoa(l.MaxCodeBytes) + " bytes"}
	}
	ctx, cancel := context.WithTimeout(ctx, l.WallTime)
	defer cancel()
	var wg sync.WaitGroup
	// Calls in flight end before the run does, their outcomes recorded.
	defer wg.Wait()
	vm, err := quickjs.NewVM()
	if err != nil {
		return "", nil, err
	}
	defer vm.Close()
	e := &engine{vm: vm, limits: l}
	vm.SetMemoryLimit(uintptr(l.Memory))
	stop := context.AfterFunc(ctx, vm.Interrupt)
	defer stop()
	if err := e.register(); err != nil {
		return "", nil, err
	}
	settle, err := e.boot(tools)
	if err != nil {
		return "", nil, err
	}
	defer settle.Free()

	src := wrap(code)
	if err := e.enter(ctx); err != nil {
		return "", nil, err
	}
	if _, cerr := vm.Compile(src, quickjs.EvalGlobal); cerr != nil {
		js, lines, terr := stripTypes(code)
		if terr != nil {
			return "", nil, terr
		}
		src, e.lines = js, lines
	}
	main, err := vm.EvalValue(src, quickjs.EvalGlobal)
	if err != nil {
		return "", e.logs, e.codeError(err)
	}
	defer main.Free()
	if _, err := settle.Call(quickjs.UndefinedValue, 0, true, main); err != nil {
		return "", e.logs, e.codeError(err)
	}
	var pending []*flight
	ready := make(chan struct{})
	close(ready)
	// Each call in flight holds a slot. A call waiting for one is already
	// the code's: it is sent when one frees, as every call ends.
	slots := make(chan struct{}, l.MaxParallel)
	for {
		if err := e.enter(ctx); err != nil {
			return "", e.logs, err
		}
		if _, err := vm.ExecutePendingJobs(); err != nil {
			return "", e.logs, e.codeError(err)
		}
		if e.fatal != nil {
			return "", e.logs, e.fatal
		}
		if e.done {
			break
		}
		// A call made alone, with none in flight, is made on this
		// goroutine: a loop of awaited calls spawns nothing.
		alone := len(e.queue) == 1 && len(pending) == 0
		for _, c := range e.queue {
			if err := halt(); err != nil {
				return "", e.logs, err
			}
			f := &flight{id: c.id, done: ready}
			now, send := start(c.global, c.method, json.RawMessage(c.args))
			switch {
			case send == nil:
				f.out = now
			case alone:
				f.out = send(ctx)
			default:
				f.done = make(chan struct{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					slots <- struct{}{}
					f.out = send(ctx)
					<-slots
					close(f.done)
				}()
			}
			pending = append(pending, f)
		}
		e.queue = nil
		if len(pending) == 0 {
			return "", e.logs, ErrNeverSettled
		}
		f := pending[0]
		pending = pending[1:]
		<-f.done
		if err := halt(); err != nil {
			return "", e.logs, err
		}
		if err := e.enter(ctx); err != nil {
			return "", e.logs, err
		}
		out := f.out
		delivered(out)
		var serr error
		if out.err != "" {
			_, serr = settle.Call(quickjs.UndefinedValue, f.id, false, out.err)
		} else {
			_, serr = settle.Call(quickjs.UndefinedValue, f.id, true, out.value)
		}
		if serr != nil {
			return "", e.logs, e.codeError(serr)
		}
	}
	if e.failure != nil {
		return "", e.logs, e.failure
	}
	result := e.result
	if e.logSize+len(result) > l.MaxOutputBytes {
		return "", e.logs, &LimitError{Limit: LimitOutput, Value: strconv.Itoa(l.MaxOutputBytes) + " bytes"}
	}
	return result, e.logs, nil
}

// enter sets what is left of the wall time before Go calls into the VM.
// The VM's own timeout starts anew on each entry.
func (e *engine) enter(ctx context.Context) error {
	if e.fatal != nil {
		return e.fatal
	}
	if ctx.Err() != nil {
		return e.stopped(ctx)
	}
	d, ok := ctx.Deadline()
	if ok {
		left := time.Until(d)
		if left <= 0 {
			return e.stopped(ctx)
		}
		e.vm.SetEvalTimeout(left)
	}
	return nil
}

// stopped is the error of a run whose context ended.
func (e *engine) stopped(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &LimitError{Limit: LimitWallTime, Value: e.limits.WallTime.String()}
	}
	return ctx.Err()
}

// register adds the two host functions the prelude takes away.
func (e *engine) register() error {
	if err := e.vm.RegisterHostFunc("__conduit_call", func(args []any) (any, error) {
		if len(args) != 4 {
			return nil, errors.New("bad host call")
		}
		id, _ := args[0].(int)
		g, _ := args[1].(string)
		m, _ := args[2].(string)
		a, _ := args[3].(string)
		e.calls++
		if e.calls > e.limits.MaxCalls {
			e.fatal = &LimitError{Limit: LimitCalls, Value: strconv.Itoa(e.limits.MaxCalls)}
			e.vm.Interrupt()
			return nil, e.fatal
		}
		e.queue = append(e.queue, hostCall{id: id, global: g, method: m, args: a})
		return nil, nil
	}); err != nil {
		return err
	}
	if err := e.vm.RegisterHostFunc("__conduit_done", func(args []any) (any, error) {
		if e.done || len(args) != 4 {
			return nil, nil
		}
		e.done = true
		ok, _ := args[0].(bool)
		a, _ := args[1].(string)
		msg, _ := args[2].(string)
		stack, _ := args[3].(string)
		if ok {
			e.result = a
			return nil, nil
		}
		e.failure = e.codeError(&quickjs.Error{Name: a, Message: msg, Stack: stack})
		return nil, nil
	}); err != nil {
		return err
	}
	return e.vm.RegisterHostFunc("__conduit_log", func(args []any) (any, error) {
		s, _ := args[0].(string)
		e.logSize += len(s) + 1
		if e.logSize > e.limits.MaxOutputBytes {
			e.fatal = &LimitError{Limit: LimitOutput, Value: strconv.Itoa(e.limits.MaxOutputBytes) + " bytes"}
			e.vm.Interrupt()
			return nil, e.fatal
		}
		e.logs = append(e.logs, s)
		return nil, nil
	})
}

// boot runs the prelude with the tools' names.
func (e *engine) boot(tools map[string][]string) (quickjs.Value, error) {
	b, err := json.Marshal(tools)
	if err != nil {
		return quickjs.Value{}, err
	}
	fn, err := e.vm.EvalValue(boot+"("+string(b)+")", quickjs.EvalGlobal)
	if err != nil {
		return quickjs.Value{}, fmt.Errorf("code mode prelude: %w", err)
	}
	return fn, nil
}
